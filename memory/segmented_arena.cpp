#include "memory/segmented_arena.hpp"

#include <algorithm>

namespace zrt {

SegmentedArena::~SegmentedArena() {
  for (auto &r : regions_) {
    // Leave no poisoned shadow behind: the system may map this range again for others.
    blocks_.unpoison_committed(*r);
    resource_.deallocate(reinterpret_cast<void *>(r->base), r->capacity);
  }
}

size_t SegmentedArena::uncommitted_bytes() const {
  return limits_.limit > reserved() ? limits_.limit - reserved() : 0;
}

Block *SegmentedArena::grow(size_t size, Lifetime) {
  size_t bytes = std::max(limits_.segment_bytes, round_up(size, unit_));
  if (reserved() + bytes > limits_.limit) {
    bytes = round_down(limits_.limit - reserved(), unit_);
    if (bytes < size) return nullptr;
  }
  auto region = std::make_unique<Region>();
  regions_.reserve(regions_.size() + 1);
  void *p = resource_.allocate(bytes);
  region->base = reinterpret_cast<uintptr_t>(p);
  region->capacity = region->committed = bytes;
  Block *b = blocks_.make(*region, region->base, bytes);
  region->first = b;
  regions_.push_back(std::move(region));
  add_reserved(bytes);
  blocks_.poison(b->addr, b->size);
  blocks_.bins().insert(b);
  return b;
}

size_t SegmentedArena::trim() {
  size_t released = 0;
  for (auto it = regions_.begin(); it != regions_.end();) {
    Region &r = **it;
    if (r.first->state == BlockState::Free && r.first->next == nullptr) {
      blocks_.bins().remove(r.first);
      blocks_.recycle(r.first);
      blocks_.unpoison(r.base, r.capacity);
      resource_.deallocate(reinterpret_cast<void *>(r.base), r.capacity);
      sub_reserved(r.capacity);
      released += r.capacity;
      it = regions_.erase(it);
    } else {
      ++it;
    }
  }
  return released;
}

}  // namespace zrt
