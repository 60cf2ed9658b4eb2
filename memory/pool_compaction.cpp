// Compaction: movable, unlocked buffers move towards their lifetime's end of each
// region, long-lived ones down and transient ones up, so that free memory gathers in the
// middle where one large request (or a trim) can use it.
//
// Each pass first plans every move on address intervals only, walking from the
// lifetime's end: a buffer goes to the first hole (from that end) that holds it, or, if
// none does, slides into the free space right next to it. Because holes are made only
// of memory that was free or that an earlier buffer of the walk vacated, executing the
// moves in walk order never overwrites a buffer that has not moved yet; a slide may
// overlap its own old range, which Resource::move allows. The region's block list is
// then rebuilt from the allocations at their new addresses, with maximal free blocks
// between them.
#include <algorithm>

#include "memory/pool.hpp"
#include "runtime/format_bytes.hpp"
#include "runtime/log.hpp"

namespace zrt {

namespace {

struct Hole {
  uintptr_t start, end;
  size_t size() const { return end - start; }
};

struct Move {
  Block *block;
  uintptr_t to;
};

}  // namespace

size_t Pool::defragment() {
  std::lock_guard lock(mutex_);
  flush_mine_locked();
  return compact_locked();
}

size_t Pool::compact_locked() {
  flush_cache();
  size_t moved = 0;
  for (auto &r : arena_->regions()) {
    moved += pack_region(*r, Lifetime::Long);
    moved += pack_region(*r, Lifetime::Transient);
  }
  if (moved > 0) {
    ++generation_;
    ++compactions_;
    moved_bytes_ += moved;
    log::debug("pool '{}': compaction moved {}; generation {}", options_.name, format_bytes(moved),
               generation_);
  }
  return moved;
}

size_t Pool::pack_region(Region &r, Lifetime lifetime) {
  const bool up = lifetime == Lifetime::Transient;
  std::vector<Hole> holes;  // ordered from the lifetime's end towards the walk position
  std::vector<Move> moves;
  // Adds a free interval met by the walk, merging it with the previous one if they touch.
  auto add_hole = [&](uintptr_t start, uintptr_t end) {
    if (!holes.empty() && (up ? holes.back().start == end : holes.back().end == start)) {
      (up ? holes.back().start : holes.back().end) = up ? start : end;
    } else {
      holes.push_back({start, end});
    }
  };
  Block *b = r.first;
  if (up)
    while (b != nullptr && b->next != nullptr)
      b = b->next;
  for (; b != nullptr; b = up ? b->prev : b->next) {
    if (b->state == BlockState::Free) {
      add_hole(b->addr, b->end());
      continue;
    }
    if (b->state != BlockState::Movable || b->locks > 0 || b->lifetime != lifetime) continue;
    const size_t size = b->size;
    auto fit =
        std::find_if(holes.begin(), holes.end(), [&](const Hole &h) { return h.size() >= size; });
    uintptr_t to;
    if (fit != holes.end()) {
      to = up ? fit->end - size : fit->start;
      (up ? fit->end : fit->start) = up ? fit->end - size : fit->start + size;
      if (fit->size() == 0) holes.erase(fit);
      add_hole(b->addr, b->end());
    } else if (!holes.empty() &&
               (up ? holes.back().start == b->end() : holes.back().end == b->addr)) {
      // Slide into the free space right next to it; that space moves to its other side.
      Hole &h = holes.back();
      size_t gap = h.size();
      to = up ? h.end - size : h.start;
      h = up ? Hole{b->addr, b->addr + gap} : Hole{h.start + size, b->end()};
    } else {
      continue;
    }
    moves.push_back({b, to});
  }
  if (moves.empty()) return 0;

  // Everything that can throw bad_alloc comes before the first move.
  size_t blocks = BlockList::count(r);
  std::vector<Block *> kept;
  kept.reserve(blocks);
  blocks_.store().ensure(blocks + 1);
  addresses_.prepare_insert();
  size_t moved = 0;
  for (const Move &m : moves) {
    Block *blk = m.block;
    blocks_.unpoison(m.to, blk->requested);
    resource_->move(reinterpret_cast<void *>(m.to), reinterpret_cast<const void *>(blk->addr),
                    blk->requested);
    addresses_.erase(blk->addr);
    blk->addr = m.to;
    addresses_.insert(blk->addr, blk);
    blocks_.poison(blk->addr + blk->requested, blk->size - blk->requested);
    moved += blk->size;
  }
  blocks_.rebuild(r, kept);
  return moved;
}

}  // namespace zrt
