// Deferred coalescing for the pool's common case, a size freed and asked for again (the
// same activation, bucket or workspace every step): a freed block waits here, unmerged,
// and the next request of the same size and lifetime takes it back in O(1) without
// touching the free bins. glibc's tcache and jemalloc's tcache do the same.
//
// Cached blocks keep their address-map entry (state Cached), so frees stay validated
// and a second free of the same pointer is still recognised. The pool drains the cache
// (merging every block into the free bins) before it grows, compacts, trims or reports
// stats, so caching never makes the pool reserve more or report a fragmentation that is
// not there.
//
// Depth. A class holds kDepth blocks in place and, once grow() is called for it, up to
// kMaxDepth in storage of its own: a training step keeps dozens of blocks of one size
// live (every layer's activation of the same shape), and with room for only 32 of them,
// `zrt-bench pool` at depth 64 and 256 paid the locked path on most calls (1.0x and 2.4x
// glibc malloc, against 0.28x at depth 16). Growth happens on the slow path only; the
// fast path reads the extra storage only for the blocks beyond the first kDepth.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "memory/pool_block.hpp"

namespace zrt {

class QuickCache {
 public:
  static constexpr size_t kSlots = 64;  // (size, lifetime) classes, direct-mapped
  static_assert(kSlots == 64);
  static constexpr size_t kDepth = 32;       // blocks per class, in place
  static constexpr size_t kMaxDepth = 1024;  // blocks per class once grown

  // The slot of a (size, lifetime) class. Thread caches compute it once per lent block
  // and keep it beside the block, so that a free need not read the block to find it.
  static size_t index(size_t size, Lifetime lifetime) {
    uint64_t h = (static_cast<uint64_t>(size) * 0x9E3779B97F4A7C15ull) ^
                 (lifetime == Lifetime::Long ? 0 : 0x5555555555555555ull);
    return h >> 58;  // the top 6 bits: kSlots == 64
  }

  // A cached block and its address.
  struct Entry {
    Block *block = nullptr;
    uintptr_t addr = 0;
  };

  // A cached block of exactly `size` bytes and `lifetime`, or nullptr.
  Block *take(size_t size, Lifetime lifetime) {
    return take_at(index(size, lifetime), size, lifetime).block;
  }
  // The same, given the class's slot i = index(size, lifetime). The address comes from
  // the cache itself, not from the block, which keeps a read of the block off the path
  // from a free to the next allocation of its size.
  Entry take_at(size_t i, size_t size, Lifetime lifetime) {
    Class &c = classes_[i];
    if (c.count == 0 || c.size != size || c.lifetime != lifetime) return {};
    uint32_t n = c.count - 1;
    set_count(c, n);
    return n < kDepth ? blocks_[i][n] : more_[i][n - kDepth];
  }

  // Keeps b if its class's slot is empty or holds its class with room; false otherwise
  // (then put() decides what to evict).
  bool put_if_room(Block *b) { return put_if_room_at(index(b->size, b->lifetime), b, b->addr); }
  // The same, given b's slot i and address.
  bool put_if_room_at(size_t i, Block *b, uintptr_t addr) {
    Class &c = classes_[i];
    if (c.count > 0 && (c.size != b->size || c.lifetime != b->lifetime)) return false;
    if (c.count >= kDepth + more_capacity_[i]) return false;
    c.size = b->size;
    c.lifetime = b->lifetime;
    entry(i, c.count) = {b, addr};
    set_count(c, c.count + 1);
    return true;
  }

  // True when b's class holds its slot and is full, but may grow.
  bool can_grow(const Block *b) const {
    size_t i = index(b->size, b->lifetime);
    const Class &c = classes_[i];
    return c.count > 0 && c.size == b->size && c.lifetime == b->lifetime &&
           c.count == kDepth + more_capacity_[i] && c.count < kMaxDepth;
  }
  // Doubles the room of slot i (up to kMaxDepth). False when no memory could be had for it;
  // nothing changes then, and the caller merges the block instead of caching it.
  bool grow(size_t i) {
    size_t cap = more_capacity_[i];
    size_t next = std::min(kMaxDepth - kDepth, cap == 0 ? kDepth : 2 * (kDepth + cap) - kDepth);
    if (next <= cap) return false;
    std::unique_ptr<Entry[]> more(new (std::nothrow) Entry[next]);
    if (more == nullptr) return false;
    for (size_t n = 0; n < cap; ++n)
      more[n] = more_[i][n];
    more_[i] = std::move(more);
    more_capacity_[i] = static_cast<uint32_t>(next);
    return true;
  }

  // Keeps b (whose size and lifetime name its class). A slot that holds another class
  // is handed over: its blocks go to evict (which merges them), since the class freed
  // last is the one most likely asked for next. False when b's class is full, and the
  // caller should merge b at once instead.
  template <class Evict>
  bool put(Block *b, Evict &&evict) {
    if (put_if_room(b)) return true;
    size_t i = index(b->size, b->lifetime);
    Class &c = classes_[i];
    if (c.size == b->size && c.lifetime == b->lifetime) return false;  // its class is full
    while (c.count > 0) {
      uint32_t n = c.count - 1;
      set_count(c, n);
      evict(entry(i, n).block);
    }
    return put_if_room(b);
  }

  // Hands every cached block to f and empties the cache.
  template <class F>
  void drain(F &&f) {
    for (size_t i = 0; i < kSlots; ++i) {
      Class &c = classes_[i];
      while (c.count > 0) {
        uint32_t n = c.count - 1;
        set_count(c, n);
        f(entry(i, n).block);
      }
    }
  }

  // Calls f(slot, entry) for every cached block (checks).
  template <class F>
  void for_each(F &&f) const {
    for (size_t i = 0; i < kSlots; ++i)
      for (uint32_t n = 0; n < classes_[i].count; ++n)
        f(i, entry(i, n));
  }

  // The number of cached blocks. Not kept as a running total: that would be one more
  // read-modify-write on every take and put, the thread caches' fast path.
  size_t count() const {
    size_t n = 0;
    for (const Class &c : classes_)
      n += c.count;
    return n;
  }
  // For threads other than the one that owns a thread cache's QuickCache (pool stats).
  size_t count_relaxed() const {
    size_t n = 0;
    for (const Class &c : classes_)
      n += std::atomic_ref<const uint32_t>(c.count).load(std::memory_order_relaxed);
    return n;
  }

 private:
  // A class's header and its blocks are kept in separate arrays whose strides are powers
  // of two, so that finding a slot is a shift rather than a multiplication.
  struct Class {
    size_t size = 0;
    uint32_t count = 0;
    Lifetime lifetime = Lifetime::Long;
  };
  static_assert(sizeof(Class) == 16);

  // Counts are stored atomically (a plain store on x86) so count_relaxed() may read them.
  static void set_count(Class &c, uint32_t n) {
    std::atomic_ref<uint32_t>(c.count).store(n, std::memory_order_relaxed);
  }

  Entry &entry(size_t i, size_t n) { return n < kDepth ? blocks_[i][n] : more_[i][n - kDepth]; }
  const Entry &entry(size_t i, size_t n) const {
    return n < kDepth ? blocks_[i][n] : more_[i][n - kDepth];
  }

  std::array<Class, kSlots> classes_{};
  std::array<std::array<Entry, kDepth>, kSlots> blocks_{};
  // A grown class's blocks beyond kDepth. The storage stays with the slot when another
  // class takes it over.
  std::array<std::unique_ptr<Entry[]>, kSlots> more_{};
  std::array<uint32_t, kSlots> more_capacity_{};
};

}  // namespace zrt
