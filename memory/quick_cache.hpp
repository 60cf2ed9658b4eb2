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
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "memory/pool_block.hpp"

namespace zrt {

class QuickCache {
 public:
  static constexpr size_t kSlots = 64;  // (size, lifetime) classes, direct-mapped
  static_assert(kSlots == 64);
  static constexpr size_t kDepth = 32;  // blocks per class

  // A cached block of exactly `size` bytes and `lifetime`, or nullptr.
  Block *take(size_t size, Lifetime lifetime) {
    Slot &s = slot(size, lifetime);
    if (s.count == 0 || s.size != size || s.lifetime != lifetime) return nullptr;
    set_count(count_ - 1);
    return s.blocks[--s.count];
  }

  // Keeps b if its class's slot is empty or holds its class with room; false otherwise
  // (then put() decides what to evict).
  bool put_if_room(Block *b) {
    Slot &s = slot(b->size, b->lifetime);
    if (s.count > 0 && (s.size != b->size || s.lifetime != b->lifetime)) return false;
    if (s.count == kDepth) return false;
    s.size = b->size;
    s.lifetime = b->lifetime;
    s.blocks[s.count++] = b;
    set_count(count_ + 1);
    return true;
  }

  // Keeps b (whose size and lifetime name its class). A slot that holds another class
  // is handed over: its blocks go to evict (which merges them), since the class freed
  // last is the one most likely asked for next. False when b's class is full, and the
  // caller should merge b at once instead.
  template <class Evict>
  bool put(Block *b, Evict &&evict) {
    if (put_if_room(b)) return true;
    Slot &s = slot(b->size, b->lifetime);
    if (s.size == b->size && s.lifetime == b->lifetime) return false;  // its class is full
    while (s.count > 0) {
      set_count(count_ - 1);
      evict(s.blocks[--s.count]);
    }
    return put_if_room(b);
  }

  // Hands every cached block to f and empties the cache.
  template <class F>
  void drain(F &&f) {
    if (count_ == 0) return;
    for (Slot &s : slots_) {
      while (s.count > 0)
        f(s.blocks[--s.count]);
    }
    set_count(0);
  }

  size_t count() const { return count_; }
  // For threads other than the one that owns a thread cache's QuickCache (pool stats).
  size_t count_relaxed() const {
    return std::atomic_ref<const size_t>(count_).load(std::memory_order_relaxed);
  }

 private:
  struct Slot {
    size_t size = 0;
    Lifetime lifetime = Lifetime::Long;
    size_t count = 0;
    std::array<Block *, kDepth> blocks{};
  };

  // The count is stored atomically (a plain store on x86) so count_relaxed() may read it.
  void set_count(size_t n) { std::atomic_ref<size_t>(count_).store(n, std::memory_order_relaxed); }

  Slot &slot(size_t size, Lifetime lifetime) {
    uint64_t h = (static_cast<uint64_t>(size) * 0x9E3779B97F4A7C15ull) ^
                 (lifetime == Lifetime::Long ? 0 : 0x5555555555555555ull);
    return slots_[h >> 58];  // the top 6 bits: kSlots == 64
  }

  std::array<Slot, kSlots> slots_{};
  size_t count_ = 0;
};

}  // namespace zrt
