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
// (idle_bytes, peak_live, the per-class counts of `idle`) are atomics the owner stores with relaxed
// order: on x86 a plain store. A free from another thread finds the block in the pool's map (under
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
#include "memory/poison.hpp"
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

  // What the fast path needs of its pool, copied so that it reads nothing of the pool
  // but its live-byte count.
  struct Limits {
    uintptr_t handle = 0;      // the pool's C handle (0: none yet)
    size_t max_block = 0;      // largest block size kept (> 0)
    size_t budget = 0;         // most idle bytes kept
    unsigned align_shift = 0;  // log2 of the pool's alignment
    bool host_accessible = false;
    const size_t *pool_live = nullptr;  // the pool's live bytes (read relaxed)
  };

  ThreadCache(Pool *pool, uint64_t serial, const Limits &limits)
      : limits(limits), pool(pool), serial(serial) {}

  static uint8_t mark(const Block *b) {
    return std::atomic_ref<const uint8_t>(b->lent).load(std::memory_order_relaxed);
  }
  static void set_mark(Block *b, uint8_t m) {
    std::atomic_ref<uint8_t>(b->lent).store(m, std::memory_order_relaxed);
  }

  // The fast path: an allocation of a size kept idle here, or a free of a live block
  // lent here that fits the cache as it is. nullptr / false for anything else — remote
  // frees waiting, an empty or foreign class, the budget, bad input — which the pool's
  // locked path then decides and reports. Owner only; never throws or locks. Measured
  // with perf before it existed, the calls and loads between the C entry point, the
  // handle table, the pool and the cache were 40% of an allocation + free.
  //
  // A free followed by an allocation of the same size (a workspace, an activation) is a
  // chain of dependent loads: the free finds the block from its address, the allocation
  // returns the address the free stored. The loads that produce that address do not go
  // through the block: the free takes the block's class slot from the lent map and
  // stores the address it was given, and the allocation returns that address (perf put
  // most of the fast path's time on the block's fields and the slot hash when they were
  // in the chain). The block's mark and size are still read, for the checks, beside it.
  void *try_allocate(size_t bytes, Lifetime lifetime) {
    if (bytes - 1 >= limits.max_block || attention.load(std::memory_order_acquire))
      return nullptr;  // bytes outside [1, max_block], or the pool's locked path first
    return take_idle(bytes, lifetime);
  }
  bool try_free(void *ptr) {
    if (attention.load(std::memory_order_acquire)) return false;
    auto p = reinterpret_cast<uintptr_t>(ptr);
    LentBlock l = lent.find(p);
    Block *b = l.block;
    if (b == nullptr || mark(b) != kLive || b->size > limits.max_block ||
        idle_bytes.load(std::memory_order_relaxed) + b->size > limits.budget ||
        !idle.put_if_room_at(l.slot, b, p))
      return false;
    mark_idle(b);
    return true;
  }

  // The address of a block of `bytes` from `idle`, now live, or nullptr.
  void *take_idle(size_t bytes, Lifetime lifetime) {
    size_t align = size_t{1} << limits.align_shift;
    size_t size = (bytes + align - 1) & ~(align - 1);
    QuickCache::Entry e = idle.take_at(QuickCache::index(size, lifetime), size, lifetime);
    if (e.block == nullptr) return nullptr;
    sub_idle(size);  // the class's size: the block's
    set_mark(e.block, kLive);
    unpoison(limits.host_accessible, e.addr, bytes);
    // The pool counts this thread's idle blocks as live; without them, this is the live
    // figure (exact when one thread uses the pool, an upper bound when several do).
    size_t live = std::atomic_ref<const size_t>(*limits.pool_live).load(std::memory_order_relaxed) -
                  idle_bytes.load(std::memory_order_relaxed);
    if (live > peak_live.load(std::memory_order_relaxed))
      peak_live.store(live, std::memory_order_relaxed);
    return reinterpret_cast<void *>(e.addr);
  }
  // b, just put in `idle`, is idle.
  void mark_idle(Block *b) {
    set_mark(b, kIdle);
    poison(limits.host_accessible, b->addr, b->size);
    add_idle(b->size);
  }

  // Owner-only counters published to readers of stats.
  void add_idle(size_t bytes) {
    idle_bytes.store(idle_bytes.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
  }
  void sub_idle(size_t bytes) {
    idle_bytes.store(idle_bytes.load(std::memory_order_relaxed) - bytes, std::memory_order_relaxed);
  }

  // The fast path's fields first, on as few cache lines as possible.
  const Limits limits;
  std::atomic<size_t> idle_bytes{0};
  std::atomic<size_t> peak_live{0};  // the pool's live bytes as this thread last raised them
  std::atomic<Pool *> pool;          // nullptr once the pool is destroyed
  // Owner only: every block lent to this cache, live or idle, with its slot in `idle`.
  struct LentBlock {
    Block *block = nullptr;
    uint32_t slot = 0;  // QuickCache::index(block->size, block->lifetime)
  };
  BasicAddressMap<LentBlock> lent;
  QuickCache idle;  // owner only
  // Written by other threads (remote frees, flush requests): on a line of its own, so
  // that those writes do not evict the line of `limits` the owner reads on every call.
  alignas(64) std::atomic<bool> attention{false};  // remote frees or a flush request wait
  std::vector<Block *> remote;                     // guarded by the pool's mutex
  bool flush_requested = false;                    // guarded by the pool's mutex
  const uint64_t serial;                           // the pool's serial number: never reused
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
// This thread's last-used cache if it belongs to the pool whose C handle is `handle`:
// the C entry points' way to their cache without reading the handle table or the pool.
// A stale handle finds nothing (its pool is gone, or the cache is not this pool's).
inline ThreadCache *find_thread_cache_by_handle(uintptr_t handle) {
  ThreadCache *c = t_last_thread_cache.cache;
  if (c == nullptr || c->limits.handle != handle || handle == 0 ||
      c->pool.load(std::memory_order_relaxed) == nullptr)
    return nullptr;
  return c;
}

// Adopts c as this thread's cache of its pool (the caller registered it with the pool),
// deleting caches whose pools are gone. Call with thread_cache_registry() held.
void adopt_thread_cache(ThreadCache *c);

}  // namespace zrt
