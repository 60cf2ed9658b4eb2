// QuickCache on its own: take and put by class, the slot-addressed operations the thread
// caches' fast path uses (take_at, put_if_room_at, the address kept beside each block),
// a slot handed over to another class, a full class, and drain.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "memory/quick_cache.hpp"

using namespace zrt;

namespace {

// Blocks of `size` bytes and `lifetime` at made-up addresses 4 KiB apart.
std::vector<Block> blocks(size_t n, size_t size, Lifetime lifetime, uintptr_t base) {
  std::vector<Block> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i].addr = base + i * 4096;
    v[i].size = size;
    v[i].lifetime = lifetime;
  }
  return v;
}

// A size other than `size` whose class shares its slot.
size_t size_sharing_slot(size_t size, Lifetime lifetime) {
  for (size_t n = size + 256; n < (size_t{64} << 20); n += 256)
    if (QuickCache::index(n, lifetime) == QuickCache::index(size, lifetime)) return n;
  return 0;
}

}  // namespace

TEST(QuickCache, TakesBackOnlyTheClassPutLastInFirstOut) {
  QuickCache q;
  auto a = blocks(3, 1024, Lifetime::Transient, 0x100000);
  for (Block &b : a)
    ASSERT_TRUE(q.put_if_room(&b));
  EXPECT_EQ(q.count(), 3u);
  EXPECT_EQ(q.take(1024, Lifetime::Long), nullptr);       // other lifetime
  EXPECT_EQ(q.take(2048, Lifetime::Transient), nullptr);  // other size
  EXPECT_EQ(q.take(1024, Lifetime::Transient), &a[2]);
  EXPECT_EQ(q.take(1024, Lifetime::Transient), &a[1]);
  EXPECT_EQ(q.count(), 1u);
  EXPECT_EQ(q.count_relaxed(), 1u);
}

TEST(QuickCache, SlotOperationsKeepTheAddressGivenBesideTheBlock) {
  QuickCache q;
  auto a = blocks(2, 4096, Lifetime::Long, 0x200000);
  size_t slot = QuickCache::index(4096, Lifetime::Long);
  ASSERT_LT(slot, QuickCache::kSlots);
  ASSERT_TRUE(q.put_if_room_at(slot, &a[0], a[0].addr));
  ASSERT_TRUE(q.put_if_room_at(slot, &a[1], a[1].addr));
  QuickCache::Entry e = q.take_at(slot, 4096, Lifetime::Long);
  EXPECT_EQ(e.block, &a[1]);
  EXPECT_EQ(e.addr, a[1].addr);
  EXPECT_EQ(q.take_at(slot, 8192, Lifetime::Long).block, nullptr);  // the slot holds 4 KiB
  e = q.take_at(slot, 4096, Lifetime::Long);
  EXPECT_EQ(e.block, &a[0]);
  EXPECT_EQ(e.addr, a[0].addr);
  EXPECT_EQ(q.take_at(slot, 4096, Lifetime::Long).block, nullptr);  // empty
  EXPECT_EQ(q.count(), 0u);
}

TEST(QuickCache, AClassFullOrASlotHeldByAnotherClassRefusesAndPutHandsTheSlotOver) {
  QuickCache q;
  auto a = blocks(QuickCache::kDepth + 1, 1024, Lifetime::Transient, 0x400000);
  for (size_t i = 0; i < QuickCache::kDepth; ++i)
    ASSERT_TRUE(q.put_if_room(&a[i]));
  EXPECT_FALSE(q.put_if_room(&a[QuickCache::kDepth]));  // full
  std::vector<Block *> evicted;
  EXPECT_FALSE(q.put(&a[QuickCache::kDepth], [&](Block *b) { evicted.push_back(b); }));
  EXPECT_TRUE(evicted.empty());  // a full class is not evicted for its own kind

  size_t other = size_sharing_slot(1024, Lifetime::Transient);
  ASSERT_NE(other, 0u);
  auto b = blocks(1, other, Lifetime::Transient, 0x800000);
  EXPECT_FALSE(q.put_if_room(&b[0]));
  EXPECT_FALSE(q.put_if_room_at(QuickCache::index(other, Lifetime::Transient), &b[0], b[0].addr));
  EXPECT_TRUE(q.put(&b[0], [&](Block *x) { evicted.push_back(x); }));
  EXPECT_EQ(evicted.size(), QuickCache::kDepth);  // the 1 KiB class gave the slot up
  EXPECT_EQ(std::set<Block *>(evicted.begin(), evicted.end()).size(), QuickCache::kDepth);
  EXPECT_EQ(q.count(), 1u);
  EXPECT_EQ(q.take(1024, Lifetime::Transient), nullptr);
  EXPECT_EQ(q.take(other, Lifetime::Transient), &b[0]);
}

TEST(QuickCache, DrainHandsEveryBlockOverAndEmptiesEverySlot) {
  QuickCache q;
  std::vector<std::vector<Block>> sets;
  size_t expected = 0;
  for (size_t size = 256; size <= 64 * 1024; size *= 2)
    for (Lifetime l : {Lifetime::Long, Lifetime::Transient}) {
      sets.push_back(blocks(3, size, l, 0x1000000 * (sets.size() + 1)));
      for (Block &b : sets.back())
        if (q.put_if_room(&b)) ++expected;
    }
  ASSERT_GT(expected, 0u);
  size_t seen = 0;
  q.for_each([&](size_t slot, const QuickCache::Entry &e) {
    EXPECT_EQ(slot, QuickCache::index(e.block->size, e.block->lifetime));
    EXPECT_EQ(e.addr, e.block->addr);
    ++seen;
  });
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(q.count(), expected);
  std::set<Block *> drained;
  q.drain([&](Block *b) { drained.insert(b); });
  EXPECT_EQ(drained.size(), expected);
  EXPECT_EQ(q.count(), 0u);
  EXPECT_EQ(q.count_relaxed(), 0u);
  for (auto &set : sets)
    for (Block &b : set)
      EXPECT_EQ(q.take(b.size, b.lifetime), nullptr);
}

// A full class grows to kMaxDepth on request and gives its blocks back last in, first out
// across the place where its own storage begins; a slot handed over evicts all of them.
TEST(QuickCache, AGrownClassHoldsUpToItsMostAndHandsOverWhole) {
  QuickCache q;
  const size_t n = QuickCache::kMaxDepth;
  auto a = blocks(n + 1, 2048, Lifetime::Long, 0x10000000);
  size_t slot = QuickCache::index(2048, Lifetime::Long);
  size_t grown = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!q.put_if_room(&a[i])) {
      ASSERT_TRUE(q.can_grow(&a[i])) << "at " << i;
      ASSERT_TRUE(q.grow(slot));
      ++grown;
      ASSERT_TRUE(q.put_if_room(&a[i])) << "at " << i;
    }
  }
  EXPECT_EQ(grown, 5u);  // 32 -> 64 -> 128 -> 256 -> 512 -> 1024
  EXPECT_EQ(q.count(), n);
  EXPECT_FALSE(q.put_if_room(&a[n]));
  EXPECT_FALSE(q.can_grow(&a[n]));  // as deep as a class goes
  EXPECT_FALSE(q.grow(slot));
  size_t seen = 0;
  q.for_each([&](size_t s, const QuickCache::Entry &e) {
    EXPECT_EQ(s, slot);
    EXPECT_EQ(e.block, &a[seen]);
    ++seen;
  });
  EXPECT_EQ(seen, n);
  // Out across the boundary of the in-place blocks, then back in.
  for (size_t i = n; i-- > QuickCache::kDepth - 2;)
    ASSERT_EQ(q.take(2048, Lifetime::Long), &a[i]);
  for (size_t i = QuickCache::kDepth - 2; i < n; ++i)
    ASSERT_TRUE(q.put_if_room(&a[i]));
  size_t other = size_sharing_slot(2048, Lifetime::Long);
  ASSERT_NE(other, 0u);
  auto b = blocks(1, other, Lifetime::Long, 0x80000000);
  EXPECT_FALSE(q.can_grow(&b[0]));  // the slot is another class's
  std::set<Block *> evicted;
  EXPECT_TRUE(q.put(&b[0], [&](Block *x) { evicted.insert(x); }));
  EXPECT_EQ(evicted.size(), n);
  EXPECT_EQ(q.count(), 1u);
  // The slot keeps its grown room for the class that took it over.
  auto c = blocks(n - 1, other, Lifetime::Long, 0x90000000);
  for (Block &x : c)
    ASSERT_TRUE(q.put_if_room(&x));
  EXPECT_EQ(q.count(), n);
}
