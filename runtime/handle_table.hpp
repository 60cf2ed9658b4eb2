// Opaque C handles that can be checked. A handle encodes a slot index and the slot's
// generation; freeing an object bumps the generation, so a stale handle (used after
// zrt_finalize, zrt_comm_destroy or zrt_request_free) is recognised and rejected even
// when its slot, or its memory, has been reused. NULL is never a valid handle.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/error.hpp"

namespace zrt {

template <class T>
class HandleTable {
  static_assert(sizeof(uintptr_t) == 8, "handles need 64-bit pointers");

 public:
  explicit HandleTable(const char *kind) : kind_(kind) {}

  // Takes ownership of object and returns its handle value (never 0).
  uintptr_t insert(std::unique_ptr<T> object) {
    std::lock_guard lock(mutex_);
    uint32_t index;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else {
      index = static_cast<uint32_t>(slots_.size());
      slots_.push_back(Slot{});
    }
    slots_[index].object = std::move(object);
    return encode(index, slots_[index].generation);
  }

  // The object behind handle, or an Error naming why the handle is not valid.
  T &get(uintptr_t handle, const char *argument) const {
    std::lock_guard lock(mutex_);
    return *slot(handle, argument).object;
  }

  // Removes and returns the object; the handle becomes stale.
  std::unique_ptr<T> remove(uintptr_t handle, const char *argument) {
    std::lock_guard lock(mutex_);
    Slot &s = slot(handle, argument);
    std::unique_ptr<T> object = std::move(s.object);
    ++s.generation;
    free_.push_back(static_cast<uint32_t>((handle & 0xffffffffu) - 1));
    return object;
  }

  size_t live() const {
    std::lock_guard lock(mutex_);
    return slots_.size() - free_.size();
  }

 private:
  struct Slot {
    std::unique_ptr<T> object;
    uint32_t generation = 1;
  };

  static uintptr_t encode(uint32_t index, uint32_t generation) {
    return (static_cast<uintptr_t>(generation) << 32) | (static_cast<uintptr_t>(index) + 1);
  }

  Slot &slot(uintptr_t handle, const char *argument) const {
    if (handle == 0) fail(ZRT_ERR_INVALID_HANDLE, "{} is a NULL {} handle", argument, kind_);
    uint64_t index = (handle & 0xffffffffu) - 1;
    uint32_t generation = static_cast<uint32_t>(handle >> 32);
    if (index >= slots_.size() || generation == 0 || generation > slots_[index].generation) {
      fail(ZRT_ERR_INVALID_HANDLE, "{} is not a {} handle (0x{:x})", argument, kind_, handle);
    }
    Slot &s = const_cast<Slot &>(slots_[index]);
    if (generation != s.generation || !s.object) {
      fail(ZRT_ERR_INVALID_HANDLE, "{} is a stale {} handle (0x{:x}): it was already released",
           argument, kind_, handle);
    }
    return s;
  }

  const char *kind_;
  mutable std::mutex mutex_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
};

// Converts between typed C handles and table values.
template <class Handle>
uintptr_t handle_value(Handle h) {
  return reinterpret_cast<uintptr_t>(h);
}
template <class Handle>
Handle to_handle(uintptr_t value) {
  return reinterpret_cast<Handle>(value);
}

}  // namespace zrt
