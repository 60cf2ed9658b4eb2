// Allocated address -> block (or what a caller keeps per block), for frees by pointer.
// Open addressing with linear probing and backward-shift deletion: no tombstones, no
// allocation per entry, and a lookup is one or two cache lines, where std::unordered_map
// would allocate a node per insert.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "memory/pool_block.hpp"

namespace zrt {

// Value is what a key maps to; a value-initialised Value is what find returns for a key
// that is not there.
template <class Value>
class BasicAddressMap {
 public:
  BasicAddressMap() { rehash(64); }

  Value find(uintptr_t key) const {
    for (size_t i = index(key);; i = (i + 1) & mask_) {
      const Entry &e = table_[i];
      if (e.key == key) return e.value;
      if (e.key == 0) return Value{};
    }
  }

  // Grows the table now if the next insert would, so that insert cannot fail.
  void prepare_insert() {
    if ((count_ + 1) * 2 > table_.size()) rehash(table_.size() * 2);
  }

  void insert(uintptr_t key, Value value) {
    prepare_insert();
    size_t i = index(key);
    while (table_[i].key != 0)
      i = (i + 1) & mask_;
    table_[i] = {key, value};
    ++count_;
  }

  bool erase(uintptr_t key) {
    size_t i = index(key);
    while (table_[i].key != key) {
      if (table_[i].key == 0) return false;
      i = (i + 1) & mask_;
    }
    // Shift later members of the probe run back so lookups never stop early.
    size_t hole = i;
    for (size_t j = (hole + 1) & mask_; table_[j].key != 0; j = (j + 1) & mask_) {
      size_t home = index(table_[j].key);
      // j's entry may fill the hole if its home is not cyclically within (hole, j].
      if (((j - home) & mask_) >= ((j - hole) & mask_)) {
        table_[hole] = table_[j];
        hole = j;
      }
    }
    table_[hole] = {};
    --count_;
    return true;
  }

  size_t size() const { return count_; }

  template <class F>
  void for_each(F &&f) const {
    for (const Entry &e : table_)
      if (e.key != 0) f(e.value);
  }

 private:
  struct Entry {
    uintptr_t key = 0;  // addresses are never 0
    Value value{};
  };

  size_t index(uintptr_t key) const {
    // Fibonacci hashing of the address without its always-zero alignment bits.
    return static_cast<size_t>(((key >> 6) * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  void rehash(size_t capacity) {
    std::vector<Entry> old = std::move(table_);
    table_.assign(capacity, Entry{});
    mask_ = capacity - 1;
    shift_ = 64u - static_cast<unsigned>(__builtin_ctzll(capacity));
    count_ = 0;
    for (const Entry &e : old)
      if (e.key != 0) insert(e.key, e.value);
  }

  std::vector<Entry> table_;
  size_t mask_ = 0;
  unsigned shift_ = 0;
  size_t count_ = 0;
};

using AddressMap = BasicAddressMap<Block *>;

}  // namespace zrt
