// The arena of a reserving resource (host memory, pinned host memory without CUDA): one
// region reserved for the pool's whole limit, committed from both ends. See arena.hpp.
#pragma once

#include "memory/arena.hpp"

namespace zrt {

class ReservingArena final : public Arena {
 public:
  // Reserves the address space (throws the resource's Error if it cannot).
  ReservingArena(Resource &resource, BlockList &blocks, const Limits &limits);
  ~ReservingArena() override;

  // The free block beside the middle on the other lifetime's side.
  Block *other_frontier(Lifetime lifetime) const override;
  size_t uncommitted_bytes() const override;
  // Commits whole segments at the lifetime's side of the middle, or the whole middle
  // when the request needs the free blocks on both sides of it.
  Block *grow(size_t size, Lifetime lifetime) override;
  // Decommits the free pages next to the middle, or opens a middle again inside the
  // largest free block when the region is fully committed.
  size_t trim() override;
  // Committed bytes in whole segments.
  size_t segments() const override;

 private:
  Region &region() const { return *regions_.front(); }
  // Commits `bytes` of the middle at its low (long-lived) or high end; returns the new
  // free block merged with its free neighbour.
  Block *commit_side(size_t bytes, bool low);
  // Trim of a region with no middle.
  size_t open_middle();
  // Gives [from, to) of the region back to the system; returns its size.
  size_t decommit(uintptr_t from, uintptr_t to);

  uintptr_t reserve_base_ = 0;  // the reservation as mapped (before aligning the region)
  size_t reserve_span_ = 0;
};

}  // namespace zrt
