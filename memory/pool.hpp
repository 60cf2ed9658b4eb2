// The defragmenting pool: one per memory space (and more on request). See
// zerort/memory.h for what it promises; this is how.
//
// Parts. The pool's memory is an Arena (arena.hpp), chosen once by the resource's shape:
// a reserving one (one region for the whole limit, long-lived blocks from its base,
// transient ones from its top, an uncommitted middle between) or a segmented one (a
// region per cudaMalloc / cudaHostAlloc segment). Blocks, their address-ordered lists and
// the free bins (FreeBins) change only through BlockList (block_list.hpp). Movable
// buffers are named by handles of a SlotTable (runtime/slot_table.hpp).
//
// Allocation. Best fit over the free bins, avoiding the block the other lifetime grows
// into, carved from the lifetime's end of the chosen block; if nothing fits, the arena
// grows (commits at the lifetime's side of the middle, or adds a segment); if that fails
// too but the free memory would suffice in one piece, compact and try again (Umpire's
// release-and-retry, with moves instead of releases); otherwise ZRT_ERR_OUT_OF_MEMORY
// with the pool's stats in the message.
//
// Compaction (pool_compaction.cpp) moves unlocked movable blocks towards their
// lifetime's end of each region and bumps the generation.
//
// Thread caches (thread_cache.hpp): allocations of up to half of thread_cache_bytes are
// served from a cache private to the calling thread, which the pool lends blocks to, so
// the common allocate / free of a size the thread used before takes no lock.
//
// Thread safety: one mutex per pool; every public member takes it, except on the thread
// cache's fast path.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "memory/address_map.hpp"
#include "memory/arena.hpp"
#include "memory/block_list.hpp"
#include "memory/pool_block.hpp"
#include "memory/quick_cache.hpp"
#include "memory/resource.hpp"
#include "memory/thread_cache.hpp"
#include "runtime/slot_table.hpp"

namespace zrt {

enum class CompactPolicy { Auto = 0, Eager = 1, Off = 2 };

struct PoolOptions {
  std::string name;  // empty: the space's name
  size_t limit = 0;  // most the pool may reserve; > 0
  size_t segment_bytes = size_t{2} << 20;
  size_t alignment = 256;  // power of two, 64 .. 1 MiB
  CompactPolicy compact = CompactPolicy::Auto;
  // Where the limit comes from, for messages ("memory.host.limit"); may be empty.
  std::string limit_key;
  // Most bytes a thread's cache keeps idle; blocks up to half of it are cached. 0: off.
  size_t thread_cache_bytes = size_t{32} << 20;
};

struct PoolStats {
  MemorySpace space = MemorySpace::Host;
  size_t limit = 0;
  size_t reserved = 0, peak_reserved = 0;
  size_t live = 0, peak_live = 0;
  size_t allocations = 0, movable_allocations = 0;
  size_t free = 0, largest_free = 0;
  size_t thread_cached = 0;  // idle in other threads' caches: neither live nor in `free`
  double fragmentation = 0;
  uint64_t compactions = 0, moved_bytes = 0, generation = 0, out_of_memory = 0;
  bool page_locked = false;
  int numa_node = -1;
  size_t segments = 0;

  nlohmann::json to_json() const;
  std::string summary() const;  // one line for messages
};

// A movable buffer: the value of its zrt_buffer_h handle, a handle of the pool's
// SlotTable (runtime/slot_table.hpp). It names the pool (a tag), the slot and the slot's
// generation, so stale and foreign handles are recognised.
struct BufferId {
  uint64_t value = 0;
  explicit operator bool() const { return value != 0; }
  bool operator==(const BufferId &) const = default;
};

class Pool {
 public:
  // Throws Error(ZRT_ERR_INVALID_ARGUMENT) for bad options, or the resource's error when
  // the address space cannot be reserved.
  Pool(std::unique_ptr<Resource> resource, PoolOptions options);
  ~Pool();
  Pool(const Pool &) = delete;
  Pool &operator=(const Pool &) = delete;

  // An immovable allocation of at least `bytes`, aligned to options().alignment.
  void *allocate(size_t bytes, Lifetime lifetime);
  void free(void *ptr);

  BufferId allocate_movable(size_t bytes, Lifetime lifetime);
  void free(BufferId buffer);
  // Address valid until generation() changes or while the buffer is locked.
  void *pointer(BufferId buffer, size_t *bytes = nullptr, uint64_t *generation = nullptr) const;
  void *lock(BufferId buffer);
  void unlock(BufferId buffer);

  // Moves unlocked movable buffers towards their ends; returns the bytes moved.
  size_t defragment();
  // Returns free whole segments to the system; returns the bytes released.
  size_t trim();

  uint64_t generation() const;
  // Drains the quick cache first, so the free-block figures are exact.
  PoolStats stats();
  nlohmann::json describe();

  MemorySpace space() const { return resource_->space(); }
  const std::string &name() const { return options_.name; }
  const PoolOptions &options() const { return options_; }
  const Resource &resource() const { return *resource_; }
  // The pool's C handle, which its thread caches carry for the C entry points' fast path
  // (find_thread_cache_by_handle). Set once, before the handle is given out.
  void set_handle(uintptr_t handle) { handle_.store(handle, std::memory_order_relaxed); }

  // True when ptr lies in memory this pool has reserved.
  bool owns(const void *ptr) const;

  // Called at thread exit with thread_cache_registry() held: c's idle blocks return to
  // the pool, its live ones become ordinary allocations.
  void retire(ThreadCache &c);

  // Checks every invariant of the bookkeeping (address order, coalescing, bins, totals);
  // throws Error(ZRT_ERR_INTERNAL) naming the first that is broken. For tests.
  void check() const;

 private:
  Block *allocate_block(size_t bytes, Lifetime lifetime, BlockState kind);
  void *allocate_cached(ThreadCache &c, size_t bytes, Lifetime lifetime);
  bool free_cached(ThreadCache &c, uintptr_t p);  // false: p is not lent to c
  ThreadCache *my_cache() const { return find_thread_cache(serial_); }
  ThreadCache *make_my_cache();
  void service(ThreadCache &c);                     // c's owner: returns remote frees (locks)
  void service_locked(ThreadCache &c);              // ... and drains c when asked to
  void flush_locked(ThreadCache &c);                // c's owner: every idle block back to the pool
  void give_back_locked(ThreadCache &c, Block *b);  // a block lent to c returns
  void remote_free_locked(Block *b);                // another thread frees b
  void flush_mine_locked();          // before stats, defragment, trim; asks other threads too
  size_t thread_idle_bytes() const;  // of every cache (relaxed reads)
  size_t thread_peak_live() const;   // peak_live_ and what the caches' fast paths saw
  void note_live();                  // peak_live_ after live_ grew
  // live_ changes under the mutex; thread caches read it without (for their peaks).
  void add_live(size_t bytes) {
    std::atomic_ref<size_t>(live_).store(live_ + bytes, std::memory_order_relaxed);
  }
  void sub_live(size_t bytes) {
    std::atomic_ref<size_t>(live_).store(live_ - bytes, std::memory_order_relaxed);
  }
  Block *find_or_make_room(size_t size, Lifetime lifetime, std::string *why);
  Block *best_fit_avoiding(size_t size, Lifetime lifetime);
  void flush_cache();
  void free_block(Block *b);  // a Raw or Movable block the caller found is freed
  Block *grow(size_t size, Lifetime lifetime, std::string *why);  // the arena's, or why not
  [[noreturn]] void out_of_memory(size_t bytes, Lifetime lifetime, bool movable,
                                  const std::string &why);
  Block &block_of(BufferId buffer, const char *argument) const;
  [[noreturn]] void bad_free(uintptr_t p) const;
  size_t compact_locked();
  size_t pack_region(Region &region, Lifetime lifetime);
  PoolStats stats_locked() const;
  bool can_compact() const { return movable_count_ > locked_count_; }

  std::unique_ptr<Resource> resource_;
  PoolOptions options_;
  bool host_accessible_;
  unsigned align_shift_;

  const uint64_t serial_;  // names this pool to thread caches; never reused
  // Its C handle (set_handle). Atomic only because the handle is in the table a moment
  // before this is set, and a forged handle could race it; 0 just means no fast path.
  std::atomic<uintptr_t> handle_{0};
  size_t cache_max_ = 0;  // largest block size a thread cache keeps (0: none)
  mutable std::mutex mutex_;
  std::vector<ThreadCache *> caches_;  // of live threads; their threads own them
  BlockList blocks_;
  std::unique_ptr<Arena> arena_;  // chosen once, by the resource's shape
  AddressMap addresses_;          // every allocated or cached block by address
  QuickCache cache_;
  // Movable buffers by handle; the tag names this pool.
  using BufferSlots = SlotTable<Block, 12>;
  BufferSlots buffers_;

  size_t live_ = 0, peak_live_ = 0;
  size_t count_ = 0, movable_count_ = 0, locked_count_ = 0;
  uint64_t compactions_ = 0, moved_bytes_ = 0, generation_ = 0, oom_count_ = 0;
};

CompactPolicy compact_from_c(zrt_compact_t compact, const char *argument);
CompactPolicy compact_from_name(const std::string &name);  // "auto", "eager", "off"
const char *compact_name(CompactPolicy policy);

}  // namespace zrt
