// Handles of the memory layer's objects (pools, offload engines) for the C ABI.
//
// Like runtime's HandleTable (slot index + generation, so NULL, foreign and stale
// handles are rejected), but lookups take no lock: a pool is looked up on every
// zrt_pool_alloc and zrt_pool_free, and a mutex there would cost as much as the rest of
// the allocation. Slots live in a fixed array, so a lookup never races a resize; insert
// and remove take a mutex. The table does not own the objects (MemoryPart does), and
// using a handle while another thread destroys it is a program error, as with free(3).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/error.hpp"

namespace zrt {

template <class T>
class ObjectTable {
 public:
  // kind: "pool"; tag: a byte that marks this table's handles.
  ObjectTable(const char *kind, uint8_t tag, uint32_t capacity = 4096)
      : kind_(kind), tag_(tag), capacity_(capacity), slots_(new Slot[capacity]) {}

  uintptr_t insert(T *object) {
    std::lock_guard lock(mutex_);
    free_.reserve(used_.load() + 1);  // so remove() never allocates
    uint32_t index;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else if (used_ < capacity_) {
      index = used_++;
    } else {
      fail(ZRT_ERR_OUT_OF_MEMORY, "too many {}s: at most {} may exist at once", kind_, capacity_);
    }
    Slot &s = slots_[index];
    s.object.store(object, std::memory_order_release);
    return encode(index, s.generation.load(std::memory_order_relaxed));
  }

  T &get(uintptr_t handle, const char *argument) const {
    if (handle == 0) fail(ZRT_ERR_INVALID_HANDLE, "{} is a NULL {} handle", argument, kind_);
    uint64_t index = (handle & 0xffffffffu) - 1;
    auto generation = static_cast<uint32_t>((handle >> 32) & 0xffffff);
    if ((handle >> 56) != tag_ || index >= used_.load(std::memory_order_acquire))
      fail(ZRT_ERR_INVALID_HANDLE, "{} is not a {} handle (0x{:x})", argument, kind_, handle);
    const Slot &s = slots_[index];
    T *object = s.object.load(std::memory_order_acquire);
    if (object == nullptr || s.generation.load(std::memory_order_acquire) != generation)
      fail(ZRT_ERR_INVALID_HANDLE, "{} is a stale {} handle (0x{:x}): it was already destroyed",
           argument, kind_, handle);
    return *object;
  }

  void remove(uintptr_t handle) {
    std::lock_guard lock(mutex_);
    auto index = static_cast<uint32_t>((handle & 0xffffffffu) - 1);
    Slot &s = slots_[index];
    s.object.store(nullptr, std::memory_order_release);
    uint32_t g = (s.generation.load(std::memory_order_relaxed) + 1) & 0xffffff;
    s.generation.store(g == 0 ? 1 : g, std::memory_order_release);
    free_.push_back(index);
  }

 private:
  struct Slot {
    std::atomic<T *> object{nullptr};
    std::atomic<uint32_t> generation{1};
  };

  uintptr_t encode(uint32_t index, uint32_t generation) const {
    return (uintptr_t{tag_} << 56) | (uintptr_t{generation} << 32) | (uintptr_t{index} + 1);
  }

  const char *kind_;
  uint8_t tag_;
  uint32_t capacity_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint32_t> used_{0};
  mutable std::mutex mutex_;
  std::vector<uint32_t> free_;
};

}  // namespace zrt
