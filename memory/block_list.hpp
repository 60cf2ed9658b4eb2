// A pool's blocks as lists: each region's blocks chained in address order, the free ones
// also in their size classes (FreeBins), and the Block objects recycled (BlockStore). Every
// change to the lists goes through these primitives, from allocation, growth, trimming
// and compaction alike, so that the invariants Pool::check() verifies (blocks cover their
// region, free neighbours are merged, every free block is in its bin, freed memory is
// poisoned) are kept in one place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <vector>

#include "memory/free_bins.hpp"
#include "memory/poison.hpp"
#include "memory/pool_block.hpp"

namespace zrt {

// Recycles Block objects so allocation does not call the system allocator for metadata.
class BlockStore {
 public:
  Block *make() {
    if (free_.empty()) refill();
    Block *b = free_.back();
    free_.pop_back();
    *b = Block{};
    return b;
  }
  void recycle(Block *b) { free_.push_back(b); }
  // Makes sure the next n make() calls cannot fail, so an operation that needs n new
  // blocks can fail (bad_alloc) before it changes anything rather than halfway.
  void ensure(size_t n) {
    while (free_.size() < n)
      refill();
  }

 private:
  void refill();
  std::vector<std::unique_ptr<Block[]>> chunks_;
  std::vector<Block *> free_;
};

// The blocks of a region in address order, for loops that do not unlink what they visit.
class RegionBlocks {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Block *;
    using difference_type = std::ptrdiff_t;
    using pointer = Block *const *;
    using reference = Block *const &;
    iterator() = default;
    explicit iterator(Block *b) : b_(b) {}
    reference operator*() const { return b_; }
    iterator &operator++() {
      b_ = b_->next;
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      b_ = b_->next;
      return old;
    }
    bool operator==(const iterator &) const = default;

   private:
    Block *b_ = nullptr;
  };
  explicit RegionBlocks(const Region &r) : first_(r.first) {}
  iterator begin() const { return iterator(first_); }
  iterator end() const { return iterator(); }

 private:
  Block *first_;
};

inline RegionBlocks blocks_of(const Region &r) {
  return RegionBlocks(r);
}

class BlockList {
 public:
  // align_shift: log2 of the pool's alignment. host_accessible: freed memory is poisoned.
  BlockList(unsigned align_shift, bool host_accessible)
      : bins_(align_shift), host_accessible_(host_accessible) {}

  FreeBins &bins() { return bins_; }
  const FreeBins &bins() const { return bins_; }
  BlockStore &store() { return store_; }
  bool host_accessible() const { return host_accessible_; }

  // A block of region r over [addr, addr + size), in no list yet.
  Block *make(Region &r, uintptr_t addr, size_t size, BlockState state = BlockState::Free) {
    Block *b = store_.make();
    b->addr = addr;
    b->size = size;
    b->region = &r;
    b->state = state;
    return b;
  }
  void recycle(Block *b) { store_.recycle(b); }

  // Links b into its region's list after `at`; at == nullptr: at the front.
  static void link_after(Block *at, Block *b) {
    Region *r = b->region;
    if (at == nullptr) {
      b->prev = nullptr;
      b->next = r->first;
      if (r->first != nullptr) r->first->prev = b;
      r->first = b;
    } else {
      b->prev = at;
      b->next = at->next;
      if (at->next != nullptr) at->next->prev = b;
      at->next = b;
    }
  }
  static void unlink(Block *b) {
    if (b->prev != nullptr)
      b->prev->next = b->next;
    else
      b->region->first = b->next;
    if (b->next != nullptr) b->next->prev = b->prev;
    b->prev = b->next = nullptr;
  }

  // b, a Free block in its region's list but in no bin, absorbs its free neighbours and
  // goes into its bin. Returns the merged block (b or its predecessor).
  Block *merge_free(Block *b);
  // Takes `size` bytes for `lifetime` from the free block f, at the lifetime's end of it
  // (low for long-lived, high for transient); the rest stays free. Returns the taken
  // block, out of the bins, still in state Free.
  Block *carve(Block *f, size_t size, Lifetime lifetime);
  // A used block becomes free: poisoned and merged with its neighbours.
  void release(Block *b);

  // Replaces r's list by `kept` (r's used and uncommitted blocks, at their addresses
  // now) in address order with maximal free blocks between them. kept: empty, with
  // capacity for every block of r, and the store ensured one block more than r has, so
  // that nothing here allocates.
  void rebuild(Region &r, std::vector<Block *> &kept);
  static size_t count(const Region &r);

  void poison(uintptr_t addr, size_t bytes) const { zrt::poison(host_accessible_, addr, bytes); }
  void unpoison(uintptr_t addr, size_t bytes) const {
    zrt::unpoison(host_accessible_, addr, bytes);
  }
  // Before r's memory goes back to the system: no poisoned shadow may stay behind.
  void unpoison_committed(const Region &r) const;

 private:
  BlockStore store_;
  FreeBins bins_;
  bool host_accessible_;
};

}  // namespace zrt
