// Handles of the memory layer's objects (pools, offload engines) for the C ABI.
//
// A SlotTable (runtime/slot_table.hpp) like runtime's HandleTable, so NULL, foreign and
// stale handles are rejected the same way, but looked up without a lock: a pool is looked
// up on every checked zrt_pool_alloc and zrt_pool_free, and a mutex there would cost as
// much as the rest of the allocation. Its slots are a fixed array (SlotLookup::LockFree),
// so a lookup never races a resize; insert and remove take a mutex. Handles carry a byte
// that names the table. The table does not own the objects (MemoryPart does), and using a
// handle while another thread destroys it is a program error, as with free(3).
#pragma once

#include <cstdint>
#include <mutex>

#include "runtime/error.hpp"
#include "runtime/slot_table.hpp"

namespace zrt {

template <class T>
class ObjectTable {
 public:
  // kind: "pool"; tag: a byte that marks this table's handles.
  ObjectTable(const char *kind, uint8_t tag, uint32_t capacity = 4096)
      : kind_(kind), capacity_(capacity), slots_(tag, capacity) {}

  uintptr_t insert(T *object) {
    std::lock_guard lock(mutex_);
    if (!slots_.prepare_insert())
      fail(ZRT_ERR_OUT_OF_MEMORY, "too many {}s: at most {} may exist at once", kind_, capacity_);
    return slots_.insert(object);
  }

  T &get(uintptr_t handle, const char *argument) const {
    typename Slots::Found f = slots_.find(handle);
    switch (f.verdict) {
      case Slots::Verdict::Valid:
        break;
      case Slots::Verdict::Null:
        fail(ZRT_ERR_INVALID_HANDLE, "{} is a NULL {} handle", argument, kind_);
      case Slots::Verdict::Foreign:
        fail(ZRT_ERR_INVALID_HANDLE, "{} is not a {} handle (0x{:x})", argument, kind_, handle);
      case Slots::Verdict::Stale:
        fail(ZRT_ERR_INVALID_HANDLE, "{} is a stale {} handle (0x{:x}): it was already destroyed",
             argument, kind_, handle);
    }
    return *f.value;
  }

  // handle: one insert() returned and remove() was not called with yet.
  void remove(uintptr_t handle) {
    std::lock_guard lock(mutex_);
    slots_.remove(Slots::index_of(handle));
  }

 private:
  using Slots = SlotTable<T, 8, SlotLookup::LockFree>;

  const char *kind_;
  uint32_t capacity_;
  Slots slots_;
  mutable std::mutex mutex_;
};

}  // namespace zrt
