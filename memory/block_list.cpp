#include "memory/block_list.hpp"

#include <algorithm>
#include <iterator>

namespace zrt {

void BlockStore::refill() {
  constexpr size_t kChunk = 256;
  chunks_.push_back(std::make_unique<Block[]>(kChunk));
  free_.reserve(free_.size() + kChunk);
  for (size_t i = 0; i < kChunk; ++i)
    free_.push_back(&chunks_.back()[kChunk - 1 - i]);
}

Block *BlockList::merge_free(Block *b) {
  if (b->prev != nullptr && b->prev->state == BlockState::Free) {
    Block *p = b->prev;
    bins_.remove(p);
    p->size += b->size;
    unlink(b);
    store_.recycle(b);
    b = p;
  }
  if (b->next != nullptr && b->next->state == BlockState::Free) {
    Block *n = b->next;
    bins_.remove(n);
    b->size += n->size;
    unlink(n);
    store_.recycle(n);
  }
  bins_.insert(b);
  return b;
}

Block *BlockList::carve(Block *f, size_t size, Lifetime lifetime) {
  bins_.remove(f);
  if (f->size == size) return f;
  Block *rest = store_.make();
  rest->region = f->region;
  rest->size = f->size - size;
  if (lifetime == Lifetime::Long) {
    rest->addr = f->addr + size;
    f->size = size;
    link_after(f, rest);
  } else {
    rest->addr = f->addr;
    f->addr += rest->size;
    f->size = size;
    link_after(f->prev, rest);
  }
  bins_.insert(rest);
  return f;
}

void BlockList::release(Block *b) {
  b->state = BlockState::Free;
  b->requested = 0;
  b->locks = 0;
  poison(b->addr, b->size);
  merge_free(b);
}

void BlockList::rebuild(Region &r, std::vector<Block *> &kept) {
  for (Block *b = r.first; b != nullptr;) {
    Block *next = b->next;
    if (b->state == BlockState::Free) {
      bins_.remove(b);
      store_.recycle(b);
    } else {
      kept.push_back(b);
    }
    b = next;
  }
  std::sort(kept.begin(), kept.end(),
            [](const Block *x, const Block *y) { return x->addr < y->addr; });
  r.first = nullptr;
  Block *last = nullptr;
  auto append = [&](Block *b) {
    b->prev = last;
    b->next = nullptr;
    if (last != nullptr)
      last->next = b;
    else
      r.first = b;
    last = b;
  };
  auto append_free = [&](uintptr_t from, uintptr_t to) {
    Block *f = make(r, from, to - from);
    append(f);
    bins_.insert(f);
    poison(from, to - from);
  };
  uintptr_t at = r.base;
  for (Block *b : kept) {
    if (b->addr > at) append_free(at, b->addr);
    append(b);
    at = b->end();
  }
  if (at < r.end()) append_free(at, r.end());
}

size_t BlockList::count(const Region &r) {
  RegionBlocks blocks = blocks_of(r);
  return static_cast<size_t>(std::distance(blocks.begin(), blocks.end()));
}

void BlockList::unpoison_committed(const Region &r) const {
  for (const Block *b : blocks_of(r))
    if (b->state != BlockState::Uncommitted) unpoison(b->addr, b->size);
}

}  // namespace zrt
