// Where a pool's blocks live and how that memory grows and shrinks: the pool's arena, one
// of two strategies, chosen once by the shape of the pool's resource (resource.hpp).
//
//  - ReservingArena (reserving_arena.hpp): one region reserved for the whole limit.
//    Long-lived blocks are committed and packed from its base, transient ones from its
//    top, and the uncommitted middle (one Uncommitted block) shrinks by whole segments as
//    either side grows, so the pool commits no more than its live memory plus less than a
//    segment per side, and both lifetimes still coalesce when they meet.
//  - SegmentedArena (segmented_arena.hpp): a region per segment that the resource hands
//    out (cudaMalloc, cudaHostAlloc), committed whole; inside each, long-lived blocks take
//    the low end and transient ones the high end.
//
// An arena changes blocks only through the pool's BlockList, and is called with the
// pool's mutex held. The pool asks it for growth, trimming, the edge to avoid and its
// figures; everything else (best fit, caches, compaction) is the pool's.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "memory/block_list.hpp"
#include "memory/pool_block.hpp"
#include "memory/resource.hpp"

namespace zrt {

class Arena {
 public:
  // The pool's options as the arena needs them.
  struct Limits {
    size_t limit = 0;          // most bytes committed at once
    size_t segment_bytes = 0;  // growth step: whole granules and alignment units
    size_t alignment = 0;      // of every block
  };

  virtual ~Arena() = default;
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;

  // Every region, in the order they were made.
  const std::vector<std::unique_ptr<Region>> &regions() const { return regions_; }
  // The region that holds address p, or nullptr.
  const Region *region_of(uintptr_t p) const;
  // Bytes committed now (the pool's `reserved`), and the most there ever were.
  size_t reserved() const { return reserved_; }
  size_t peak_reserved() const { return peak_reserved_; }

  // The free block at the edge the other lifetime grows into, which a best fit for
  // `lifetime` should take only when nothing else serves; nullptr when there is none.
  virtual Block *other_frontier(Lifetime lifetime) const = 0;
  // Bytes the arena could still commit.
  virtual size_t uncommitted_bytes() const = 0;
  // Commits memory for a request of `size` bytes (a multiple of the alignment) and
  // returns a free block, in its bin, that holds it at the lifetime's side; nullptr when
  // the limit leaves no room. Throws the resource's Error, changing nothing, when the
  // resource refuses. The BlockStore must be able to make two blocks.
  virtual Block *grow(size_t size, Lifetime lifetime) = 0;
  // Returns free memory to the system; returns the bytes released. The caches must be
  // flushed and the BlockStore able to make two blocks.
  virtual size_t trim() = 0;
  // Segments committed, for stats.
  virtual size_t segments() const = 0;

 protected:
  Arena(Resource &resource, BlockList &blocks, const Limits &limits);

  void add_reserved(size_t bytes) {
    reserved_ += bytes;
    peak_reserved_ = std::max(peak_reserved_, reserved_);
  }
  void sub_reserved(size_t bytes) { reserved_ -= bytes; }

  Resource &resource_;
  BlockList &blocks_;
  const Limits limits_;
  const size_t unit_;  // whole granules of the resource and whole alignment units
  std::vector<std::unique_ptr<Region>> regions_;

 private:
  size_t reserved_ = 0, peak_reserved_ = 0;
};

// The arena for the shape of `resource`. Throws the resource's Error when the address
// space cannot be reserved.
std::unique_ptr<Arena> make_arena(Resource &resource, BlockList &blocks,
                                  const Arena::Limits &limits);

}  // namespace zrt
