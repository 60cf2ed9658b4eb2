// The arena of a segmented resource (cudaMalloc, cudaHostAlloc): a region per segment,
// committed whole. See arena.hpp.
#pragma once

#include "memory/arena.hpp"

namespace zrt {

class SegmentedArena final : public Arena {
 public:
  SegmentedArena(Resource &resource, BlockList &blocks, const Limits &limits)
      : Arena(resource, blocks, limits) {}
  ~SegmentedArena() override;

  // None: segments do not grow into each other.
  Block *other_frontier(Lifetime) const override { return nullptr; }
  // What the limit still allows.
  size_t uncommitted_bytes() const override;
  // A new segment of segment_bytes, or of the request's size if larger, cut to what the
  // limit leaves.
  Block *grow(size_t size, Lifetime lifetime) override;
  // Deallocates every segment that is wholly free.
  size_t trim() override;
  size_t segments() const override { return regions_.size(); }
};

}  // namespace zrt
