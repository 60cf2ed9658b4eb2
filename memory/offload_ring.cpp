#include "memory/offload_ring.hpp"

#include "runtime/error.hpp"

namespace zrt {

OffloadRing::OffloadRing(size_t capacity, size_t alignment)
    : capacity_(capacity / alignment * alignment), alignment_(alignment) {}

size_t OffloadRing::head() const {
  return entries_.empty() ? 0 : entries_.back().offset + entries_.back().size;
}

std::optional<size_t> OffloadRing::reserve(size_t bytes) {
  if (bytes == 0 || bytes > capacity_) return std::nullopt;
  size_t size = (bytes + alignment_ - 1) / alignment_ * alignment_;
  size_t offset;
  if (entries_.empty()) {
    offset = 0;
  } else {
    size_t tail = entries_.front().offset, h = head();
    if (entries_.back().offset >= tail) {
      // Not wrapped: room after the head, else before the tail.
      if (capacity_ - h >= size)
        offset = h;
      else if (tail >= size)
        offset = 0;
      else
        return std::nullopt;
    } else {
      // Wrapped: the only room is between the head and the tail.
      if (tail - h >= size)
        offset = h;
      else
        return std::nullopt;
    }
  }
  entries_.push_back({offset, size, false});
  used_ += size;
  ++live_;
  return offset;
}

void OffloadRing::release(size_t offset) {
  // Backward releases the newest entries first: search from the back.
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->offset != offset || it->released) continue;
    it->released = true;
    used_ -= it->size;
    --live_;
    while (!entries_.empty() && entries_.back().released)
      entries_.pop_back();
    while (!entries_.empty() && entries_.front().released)
      entries_.pop_front();
    return;
  }
  fail(ZRT_ERR_INTERNAL, "offload ring: offset {} is not held", offset);
}

}  // namespace zrt
