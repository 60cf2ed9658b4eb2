// Opaque C handles that can be checked: a SlotTable (runtime/slot_table.hpp) that owns its
// objects and takes a mutex on every call. Freeing an object bumps its slot's generation,
// so a stale handle (used after zrt_finalize, zrt_comm_destroy or zrt_request_free) is
// recognised and rejected even when its slot, or its memory, has been reused. NULL is
// never a valid handle.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "runtime/error.hpp"
#include "runtime/slot_table.hpp"

namespace zrt {

template <class T>
class HandleTable {
  static_assert(sizeof(uintptr_t) == 8, "handles need 64-bit pointers");

 public:
  explicit HandleTable(const char *kind) : kind_(kind) {}
  ~HandleTable() {
    slots_.for_each([](T *object) { delete object; });
  }
  HandleTable(const HandleTable &) = delete;
  HandleTable &operator=(const HandleTable &) = delete;

  // Takes ownership of object and returns its handle value (never 0).
  uintptr_t insert(std::unique_ptr<T> object) {
    std::lock_guard lock(mutex_);
    if (!slots_.prepare_insert())
      fail(ZRT_ERR_OUT_OF_MEMORY, "too many {} handles: at most {} may exist at once", kind_,
           Slots::kMaxSlots);
    return slots_.insert(object.release());
  }

  // The object behind handle, or an Error naming why the handle is not valid.
  T &get(uintptr_t handle, const char *argument) const {
    std::lock_guard lock(mutex_);
    return *find(handle, argument);
  }

  // Removes and returns the object; the handle becomes stale.
  std::unique_ptr<T> remove(uintptr_t handle, const char *argument) {
    std::lock_guard lock(mutex_);
    find(handle, argument);
    return std::unique_ptr<T>(slots_.remove(Slots::index_of(handle)));
  }

  size_t live() const {
    std::lock_guard lock(mutex_);
    return slots_.live();
  }

 private:
  using Slots = SlotTable<T, 0, SlotLookup::Locked>;

  T *find(uintptr_t handle, const char *argument) const {
    typename Slots::Found f = slots_.find(handle);
    switch (f.verdict) {
      case Slots::Verdict::Valid:
        break;
      case Slots::Verdict::Null:
        fail(ZRT_ERR_INVALID_HANDLE, "{} is a NULL {} handle", argument, kind_);
      case Slots::Verdict::Foreign:
        fail(ZRT_ERR_INVALID_HANDLE, "{} is not a {} handle (0x{:x})", argument, kind_, handle);
      case Slots::Verdict::Stale:
        fail(ZRT_ERR_INVALID_HANDLE, "{} is a stale {} handle (0x{:x}): it was already released",
             argument, kind_, handle);
    }
    return f.value;
  }

  const char *kind_;
  mutable std::mutex mutex_;
  Slots slots_;
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
