#include "memory/reserving_arena.hpp"

#include <algorithm>

namespace zrt {

ReservingArena::ReservingArena(Resource &resource, BlockList &blocks, const Limits &limits)
    : Arena(resource, blocks, limits) {
  const size_t a = limits_.alignment;
  size_t capacity = std::max(round_down(limits_.limit, unit_), unit_);
  // Over-reserve by one alignment so the region can start aligned.
  size_t span = capacity + (a > resource_.granularity() ? a : 0);
  auto region = std::make_unique<Region>();
  regions_.reserve(1);
  auto raw = reinterpret_cast<uintptr_t>(resource_.reserve(span));
  region->base = round_up(raw, a);
  region->capacity = capacity;
  reserve_base_ = raw;
  reserve_span_ = span;
  Block *gap = blocks_.make(*region, region->base, capacity, BlockState::Uncommitted);
  region->first = region->gap = gap;
  regions_.push_back(std::move(region));
}

ReservingArena::~ReservingArena() {
  // Leave no poisoned shadow behind: the system may map this range again for others.
  blocks_.unpoison_committed(region());
  resource_.unreserve(reinterpret_cast<void *>(reserve_base_), reserve_span_);
}

Block *ReservingArena::other_frontier(Lifetime lifetime) const {
  const Block *gap = region().gap;
  if (gap == nullptr) return nullptr;
  Block *b = lifetime == Lifetime::Long ? gap->next : gap->prev;
  return b != nullptr && b->state == BlockState::Free ? b : nullptr;
}

size_t ReservingArena::uncommitted_bytes() const {
  const Region &r = region();
  return r.gap != nullptr ? r.gap->size : 0;
}

Block *ReservingArena::grow(size_t size, Lifetime lifetime) {
  Block *gap = region().gap;
  if (gap == nullptr) return nullptr;
  size_t low_free =
      gap->prev != nullptr && gap->prev->state == BlockState::Free ? gap->prev->size : 0;
  size_t high_free =
      gap->next != nullptr && gap->next->state == BlockState::Free ? gap->next->size : 0;
  bool low = lifetime == Lifetime::Long;
  size_t own = low ? low_free : high_free;
  size_t commit = round_up(size - std::min(size, own), limits_.segment_bytes);
  if (commit < gap->size) return commit_side(commit, low);
  // The whole middle: it joins the free blocks on both sides into one.
  if (low_free + gap->size + high_free >= size) return commit_side(gap->size, low);
  return nullptr;
}

Block *ReservingArena::commit_side(size_t bytes, bool low) {
  Region &r = region();
  Block *gap = r.gap;
  uintptr_t at = low ? gap->addr : gap->end() - bytes;
  resource_.commit(reinterpret_cast<void *>(at), bytes);
  Block *b = blocks_.make(r, at, bytes);
  if (low) {
    gap->addr += bytes;
    gap->size -= bytes;
    BlockList::link_after(gap->prev, b);
  } else {
    gap->size -= bytes;
    BlockList::link_after(gap, b);
  }
  if (gap->size == 0) {
    BlockList::unlink(gap);
    blocks_.recycle(gap);
    r.gap = nullptr;
  }
  r.committed += bytes;
  add_reserved(bytes);
  blocks_.poison(b->addr, b->size);
  return blocks_.merge_free(b);
}

size_t ReservingArena::decommit(uintptr_t from, uintptr_t to) {
  Region &r = region();
  blocks_.unpoison(from, to - from);
  resource_.decommit(reinterpret_cast<void *>(from), to - from);
  r.committed -= to - from;
  sub_reserved(to - from);
  return to - from;
}

size_t ReservingArena::trim() {
  Region &r = region();
  if (r.gap == nullptr) return open_middle();
  size_t released = 0;
  size_t page = resource_.granularity();
  FreeBins &bins = blocks_.bins();
  Block *gap = r.gap;
  if (Block *lo = gap->prev; lo != nullptr && lo->state == BlockState::Free) {
    uintptr_t from = round_up(lo->addr, page);
    if (from < lo->end()) {
      size_t n = lo->end() - from;
      bins.remove(lo);
      if (from == lo->addr) {
        BlockList::unlink(lo);
        blocks_.recycle(lo);
      } else {
        lo->size -= n;
        bins.insert(lo);
      }
      gap->addr -= n;
      gap->size += n;
      released += decommit(from, from + n);
    }
  }
  if (Block *hi = gap->next; hi != nullptr && hi->state == BlockState::Free) {
    uintptr_t to = round_down(hi->end(), page);
    if (to > hi->addr) {
      size_t n = to - hi->addr;
      bins.remove(hi);
      if (to == hi->end()) {
        BlockList::unlink(hi);
        blocks_.recycle(hi);
      } else {
        hi->addr += n;
        hi->size -= n;
        bins.insert(hi);
      }
      uintptr_t from = gap->end();
      gap->size += n;
      released += decommit(from, from + n);
    }
  }
  return released;
}

size_t ReservingArena::open_middle() {
  Region &r = region();
  size_t page = resource_.granularity();
  FreeBins &bins = blocks_.bins();
  // Fully committed: open a middle again inside the largest free block.
  Block *f = bins.largest();
  if (f == nullptr) return 0;
  uintptr_t from = round_up(f->addr, page), to = round_down(f->end(), page);
  if (from >= to) return 0;
  bins.remove(f);
  Block *gap = blocks_.make(r, from, to - from, BlockState::Uncommitted);
  Block *before = f->prev;
  uintptr_t f_end = f->end();
  if (from > f->addr) {
    f->size = from - f->addr;
    bins.insert(f);
    before = f;
  } else {
    BlockList::unlink(f);
    blocks_.recycle(f);
  }
  BlockList::link_after(before, gap);
  if (to < f_end) {
    Block *after = blocks_.make(r, to, f_end - to);
    BlockList::link_after(gap, after);
    bins.insert(after);
  }
  r.gap = gap;
  return decommit(from, to);
}

size_t ReservingArena::segments() const {
  return (reserved() + limits_.segment_bytes - 1) / limits_.segment_bytes;
}

}  // namespace zrt
