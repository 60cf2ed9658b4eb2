// The bookkeeping of a pool: blocks (address ranges that are free, allocated or not yet
// committed) chained in address order within a region. Metadata lives outside the
// memory it describes, so device memory needs no host-visible headers and a stray write
// into a buffer cannot corrupt the pool.
#pragma once

#include <cstddef>
#include <cstdint>

#include "memory/memory_space.hpp"

namespace zrt {

enum class BlockState : uint8_t {
  Free,         // committed, in a free bin
  Raw,          // allocated; never moves
  Movable,      // allocated; addressed by a handle; compaction may move it
  Uncommitted,  // the reserved but uncommitted middle of a reserving region
  Cached,       // freed, waiting unmerged in the QuickCache for a request of its size
  Lent,         // allocated to a thread's cache (ThreadCache), which hands it out itself
};

struct Region;
class ThreadCache;

// Aligned so that the first 32 bytes, all the thread caches' fast path reads of a block,
// never straddle two cache lines.
struct alignas(32) Block {
  uintptr_t addr = 0;
  size_t size = 0;  // a multiple of the pool's alignment
  Lifetime lifetime = Lifetime::Long;
  BlockState state = BlockState::Free;
  uint8_t lent = 0;                        // Lent: ThreadCache::kLive, kIdle or kRemoteFreed
  ThreadCache *owner = nullptr;            // Lent: the cache it is lent to
  Block *prev = nullptr, *next = nullptr;  // address neighbours in the region
  Block *bin_prev = nullptr, *bin_next = nullptr;  // the free bin's list, while Free
  Region *region = nullptr;
  uint32_t bin = 0;
  uint32_t slot = 0;     // Movable: index of its handle slot
  uint32_t locks = 0;    // Movable: zrt_pool_lock count; locked buffers do not move
  size_t requested = 0;  // bytes asked for (<= size)

  uintptr_t end() const { return addr + size; }
  bool used() const {
    return state == BlockState::Raw || state == BlockState::Movable || state == BlockState::Lent;
  }
};

static_assert(offsetof(Block, lent) < 32 && offsetof(Block, size) < 32,
              "the fast path's fields of a Block must stay in its first 32 bytes");

// A contiguous address range of a pool's arena (arena.hpp): the one reservation of a
// reserving resource (committed at both ends, an Uncommitted block in the middle), or one
// segment of a segmented resource (committed whole).
struct Region {
  uintptr_t base = 0;
  size_t capacity = 0;
  Block *first = nullptr;
  Block *gap = nullptr;  // the Uncommitted block; nullptr when fully committed or a segment
  size_t committed = 0;

  uintptr_t end() const { return base + capacity; }
  bool contains(uintptr_t p) const { return p >= base && p < end(); }
};

// Sizes in a pool are whole units: of its alignment, of a page, of a segment.
inline size_t round_up(size_t v, size_t unit) {
  return (v + unit - 1) / unit * unit;
}
inline size_t round_down(size_t v, size_t unit) {
  return v / unit * unit;
}

}  // namespace zrt
