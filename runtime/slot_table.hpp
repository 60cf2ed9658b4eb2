// The one handle scheme of zerort: slots that hold a value, handles that name a slot and
// the generation it had when the handle was made. HandleTable (runtime/handle_table.hpp),
// ObjectTable (memory/object_table.hpp), a pool's movable buffers (BufferId) and an
// offload engine's tokens (memory/offload.hpp) are this table with different policies and
// their own messages.
//
// A handle is 64 bits:
//   [63 .. 64-TagBits]   tag: which table (or pool) made it; absent when TagBits is 0
//   [63-TagBits .. 32]   the slot's generation, never 0
//   [31 .. 0]            slot index + 1, so 0 is never a handle
// Removing a value bumps its slot's generation: a handle kept past its value's removal
// is stale even once the slot holds another value. A handle whose tag, slot or
// generation the table never gave out is foreign. Generations wrap after
// 2^(32-TagBits) - 1 removals from one slot, and from then on every generation counts
// as given out (so an old handle may be taken for a live one of the same slot, as with
// any generation scheme).
//
// Lookup policy. Locked: the slots are a vector that grows, and every call holds the
// owner's lock. LockFree: the slots are an array sized once, so find() may run without a
// lock while insert() and remove() hold one; values and generations are published with
// release stores and read with acquire loads (plain moves on x86).
//
// The table does not own its values.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace zrt {

enum class SlotLookup { Locked, LockFree };

template <class T, unsigned TagBits, SlotLookup Lookup = SlotLookup::Locked>
class SlotTable {
  static_assert(TagBits < 32, "a handle needs at least one generation bit");
  static constexpr bool kLockFree = Lookup == SlotLookup::LockFree;

 public:
  static constexpr unsigned kGenerationBits = 32 - TagBits;
  static constexpr uint64_t kGenerationMask = (uint64_t{1} << kGenerationBits) - 1;
  // Index + 1 must fit in 32 bits.
  static constexpr uint32_t kMaxSlots = 0xffffffffu;

  enum class Verdict { Valid, Null, Foreign, Stale };
  struct Found {
    Verdict verdict = Verdict::Null;
    T *value = nullptr;  // set when Valid
  };

  // tag: marks this table's handles (below 2^TagBits). capacity: most slots there may be;
  // a LockFree table allocates them all now.
  explicit SlotTable(uint32_t tag = 0, uint32_t capacity = kMaxSlots)
      : tag_(tag), capacity_(capacity) {
    if constexpr (kLockFree) slots_.resize(capacity);
  }

  // Makes sure the next insert() cannot fail, so a caller can take a slot first and fail
  // before it changes anything else. False when all `capacity` slots are taken; may throw
  // std::bad_alloc.
  bool prepare_insert() {
    if (!free_.empty()) return true;
    if (used_ >= capacity_) return false;
    // remove() pushes onto free_, which must then never allocate either.
    auto room = [&](auto &v) {
      if (v.capacity() < size_t{used_} + 1)
        v.reserve(std::min<size_t>(capacity_, std::max<size_t>(16, 2 * size_t{used_})));
    };
    if constexpr (!kLockFree) room(slots_);
    room(free_);
    return true;
  }

  // Puts value (not nullptr) in a slot and returns its handle. Call prepare_insert() first.
  uint64_t insert(T *value) {
    uint32_t index;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else {
      index = used_;
      if constexpr (!kLockFree) slots_.emplace_back();
      store(used_, used_ + 1);
    }
    Slot &s = slots_[index];
    store(s.value, value);
    return encode(index, s.generation);
  }

  // What handle names. A LockFree table may be asked without its owner's lock.
  Found find(uint64_t handle) const {
    if (handle == 0) return {Verdict::Null};
    uint64_t index = (handle & 0xffffffffu) - 1;
    uint64_t generation = (handle >> 32) & kGenerationMask;
    if (tag_of(handle) != tag_ || index >= load(used_)) return {Verdict::Foreign};
    const Slot &s = slots_[index];
    T *value = load(s.value);
    uint64_t now = load(s.generation);
    // A generation this slot has not reached yet was never given out.
    if (generation == 0 || (now <= kGenerationMask && generation > now)) return {Verdict::Foreign};
    if (value == nullptr || (now & kGenerationMask) != generation) return {Verdict::Stale};
    return {Verdict::Valid, value};
  }

  // Empties the slot of a valid handle (index_of(handle)) and returns its value; every
  // handle of it is stale from now on. Never allocates.
  T *remove(uint32_t index) {
    Slot &s = slots_[index];
    T *value = s.value;
    store(s.value, static_cast<T *>(nullptr));
    uint64_t g = s.generation + 1;
    if ((g & kGenerationMask) == 0) ++g;
    store(s.generation, g);
    free_.push_back(index);
    return value;
  }

  // The value in slot index, or nullptr (consistency checks).
  T *at(uint32_t index) const { return index < used_ ? slots_[index].value : nullptr; }

  size_t live() const { return used_ - free_.size(); }

  // Calls f(value) for every value in the table, in slot order.
  template <class F>
  void for_each(F &&f) const {
    for (uint32_t i = 0; i < used_; ++i)
      if (slots_[i].value != nullptr) f(slots_[i].value);
  }

  static uint32_t index_of(uint64_t handle) {
    return static_cast<uint32_t>((handle & 0xffffffffu) - 1);
  }

 private:
  struct Slot {
    T *value = nullptr;
    // Counts up from 1, skipping multiples of 2^kGenerationBits; a handle carries its low
    // bits. Above kGenerationMask the slot's generations have wrapped.
    uint64_t generation = 1;
  };

  uint64_t encode(uint32_t index, uint64_t generation) const {
    uint64_t tag = 0;
    if constexpr (TagBits > 0) tag = uint64_t{tag_} << (64 - TagBits);
    return tag | ((generation & kGenerationMask) << 32) | (uint64_t{index} + 1);
  }
  static uint32_t tag_of(uint64_t handle) {
    if constexpr (TagBits > 0) return static_cast<uint32_t>(handle >> (64 - TagBits));
    return 0;
  }

  template <class V>
  static V load(const V &x) {
    if constexpr (kLockFree)
      return std::atomic_ref<V>(const_cast<V &>(x)).load(std::memory_order_acquire);
    return x;
  }
  template <class V>
  static void store(V &x, V v) {
    if constexpr (kLockFree)
      std::atomic_ref<V>(x).store(v, std::memory_order_release);
    else
      x = v;
  }

  const uint32_t tag_;
  const uint32_t capacity_;
  std::vector<Slot> slots_;
  uint32_t used_ = 0;           // slots handed out so far: slots_[0, used_)
  std::vector<uint32_t> free_;  // emptied slots, reused last-in first-out
};

}  // namespace zrt
