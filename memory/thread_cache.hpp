// A thread's private cache of one pool's blocks: the fast path of Pool::allocate and
// Pool::free (and so of zrt_pool_alloc / zrt_pool_free), which takes no lock and no atomic
// read-modify-write. Measured before it existed: the pool's mutex was 55% of an
// allocation + free (two uncontended lock/unlock pairs, ~30 ns of ~56 ns on this machine).
//
// The pool lends blocks to the cache: a lent block is allocated as far as the pool knows
// (state Lent, in the pool's address map, counted live), and the cache hands it out and
// takes it back as often as the program allocates and frees that size, without telling
// the pool. The cache keeps its idle blocks in a QuickCache (per size and lifetime) up to a
// byte budget, and a private address map of every block lent to it, so a free finds its
// block without the pool's map. A block goes back to the pool when the budget or its
// class is full, when the pool needs memory (an allocation that would fail, stats,
// defragment, trim), and when the thread exits.
//
// Ownership. Only the owning thread touches `idle` and `lent`. Fields others read
// (idle_bytes, peak_live, the count of `idle`) are atomics the owner stores with relaxed order: on
// x86 a plain store. A free from another thread finds the block in the pool's map (under
// the pool's mutex), marks it and queues it on `remote`; the owner returns it to the pool
// at its next call (`attention`). A block's live/idle mark (Block::lent) is written by
// the owner and read by others under the pool's mutex, so a second free from any thread
// is recognised unless it races the first (a race that free(3) does not survive either).
//
// Lifetime. The thread's list owns its caches; the pool keeps pointers to them. Whichever
// goes first tells the other under a process-wide mutex (thread_cache_registry()): a
// thread that exits returns its idle blocks and turns its live ones into ordinary
// allocations; a pool that is destroyed orphans the caches, which their threads delete.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "memory/address_map.hpp"
#include "memory/pool_block.hpp"
#include "memory/quick_cache.hpp"

namespace zrt {

class Pool;

class ThreadCache {
 public:
  // Block::lent of a lent block.
  static constexpr uint8_t kLive = 1;         // handed out to the program
  static constexpr uint8_t kIdle = 2;         // waiting in `idle`
  static constexpr uint8_t kRemoteFreed = 3;  // freed by another thread, queued on `remote`

  ThreadCache(Pool *pool, uint64_t serial) : pool(pool), serial(serial) {}

  static uint8_t mark(const Block *b) {
    return std::atomic_ref<const uint8_t>(b->lent).load(std::memory_order_relaxed);
  }
  static void set_mark(Block *b, uint8_t m) {
    std::atomic_ref<uint8_t>(b->lent).store(m, std::memory_order_relaxed);
  }

  // Owner-only counters published to readers of stats.
  void add_idle(size_t bytes) {
    idle_bytes.store(idle_bytes.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
  }
  void sub_idle(size_t bytes) {
    idle_bytes.store(idle_bytes.load(std::memory_order_relaxed) - bytes, std::memory_order_relaxed);
  }

  QuickCache idle;  // owner only
  AddressMap lent;  // owner only: every block lent to this cache, live or idle
  std::atomic<size_t> idle_bytes{0};
  std::atomic<size_t> peak_live{0};    // the pool's live bytes as this thread last raised them
  std::atomic<bool> attention{false};  // remote frees or a flush request are waiting
  std::vector<Block *> remote;         // guarded by the pool's mutex
  bool flush_requested = false;        // guarded by the pool's mutex
  std::atomic<Pool *> pool;            // nullptr once the pool is destroyed
  const uint64_t serial;               // the pool's serial number: never reused
};

// Orders pool destruction against thread exit (see above). Taken before a pool's mutex.
std::mutex &thread_cache_registry();

// The last cache this thread used. Trivially destructible and constinit, so reading it
// needs no init guard, and initial-exec, so it is one %fs-relative load instead of a call
// to __tls_get_addr (16 bytes of the static TLS surplus glibc keeps for libraries).
struct LastThreadCache {
  uint64_t serial = 0;
  ThreadCache *cache = nullptr;
};
extern constinit thread_local LastThreadCache t_last_thread_cache
    __attribute__((tls_model("initial-exec")));

ThreadCache *find_thread_cache_slow(uint64_t serial);

// This thread's cache for the pool with this serial number, or nullptr.
inline ThreadCache *find_thread_cache(uint64_t serial) {
  if (t_last_thread_cache.serial == serial) return t_last_thread_cache.cache;
  return find_thread_cache_slow(serial);
}
// Adopts c as this thread's cache of its pool (the caller registered it with the pool),
// deleting caches whose pools are gone. Call with thread_cache_registry() held.
void adopt_thread_cache(ThreadCache *c);

}  // namespace zrt
