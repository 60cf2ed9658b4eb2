// The handle scheme under HandleTable, ObjectTable and a pool's buffer handles: stale and
// foreign handles, the tag, wrapping generations, capacity, and slot reuse.
#include <gtest/gtest.h>

#include "runtime/slot_table.hpp"

using namespace zrt;

namespace {

struct Thing {
  int value;
};

// 28 tag bits leave 4 generation bits: a slot's generations wrap after 15 removals.
using Narrow = SlotTable<Thing, 28>;
using Tagged = SlotTable<Thing, 8, SlotLookup::LockFree>;

uint64_t put(Narrow &t, Thing *x) {
  EXPECT_TRUE(t.prepare_insert());
  return t.insert(x);
}

}  // namespace

TEST(SlotTable, AHandleNamesItsValueUntilRemovedAndIsStaleAfterTheSlotIsReused) {
  Narrow t(5);
  Thing a{1}, b{2};
  uint64_t ha = put(t, &a);
  EXPECT_NE(ha, 0u);
  EXPECT_EQ(ha >> 36, 5u) << "the tag is in the top bits";
  EXPECT_EQ(t.find(ha).verdict, Narrow::Verdict::Valid);
  EXPECT_EQ(t.find(ha).value, &a);
  EXPECT_EQ(t.remove(Narrow::index_of(ha)), &a);
  EXPECT_EQ(t.find(ha).verdict, Narrow::Verdict::Stale);
  uint64_t hb = put(t, &b);  // the same slot, the next generation
  EXPECT_EQ(Narrow::index_of(hb), Narrow::index_of(ha));
  EXPECT_NE(hb, ha);
  EXPECT_EQ(t.find(ha).verdict, Narrow::Verdict::Stale);
  EXPECT_EQ(t.find(hb).value, &b);
  EXPECT_EQ(t.live(), 1u);
}

TEST(SlotTable, NullForeignTagsSlotsAndGenerationsAreRecognised) {
  Narrow t(5), other(6);
  Thing a{1};
  uint64_t h = put(t, &a);
  EXPECT_EQ(t.find(0).verdict, Narrow::Verdict::Null);
  EXPECT_EQ(other.find(h).verdict, Narrow::Verdict::Foreign) << "another table's tag";
  EXPECT_EQ(t.find(h + 1).verdict, Narrow::Verdict::Foreign) << "a slot never handed out";
  EXPECT_EQ(t.find(h & ~uint64_t{0xffffffff}).verdict, Narrow::Verdict::Foreign) << "index 0";
  EXPECT_EQ(t.find(h & ~(uint64_t{0xf} << 32)).verdict, Narrow::Verdict::Foreign) << "generation 0";
  EXPECT_EQ(t.find(h + (uint64_t{1} << 32)).verdict, Narrow::Verdict::Foreign)
      << "a generation the slot has not reached";
}

TEST(SlotTable, GenerationsWrapSkippingZeroAndThenAllCountAsGivenOut) {
  Narrow t(1);
  Thing a{1};
  uint64_t first = put(t, &a);
  uint32_t slot = Narrow::index_of(first);
  std::vector<uint64_t> seen = {first};
  for (int i = 0; i < 15; ++i) {
    t.remove(slot);
    seen.push_back(put(t, &a));
  }
  // Generations 1..15, then 1 again: never 0.
  for (size_t i = 0; i < seen.size(); ++i)
    EXPECT_EQ((seen[i] >> 32) & 0xf, i % 15 + 1) << i;
  EXPECT_EQ(seen.back(), first);
  t.remove(slot);
  put(t, &a);  // generation 2 of the second round
  // Once wrapped, every non-zero generation was given out: old handles are stale.
  EXPECT_EQ(t.find(seen[5]).verdict, Narrow::Verdict::Stale);
  EXPECT_EQ(t.find(seen[1]).verdict, Narrow::Verdict::Valid);
}

TEST(SlotTable, AFixedTableFillsToItsCapacityAndReusesSlotsLastFreedFirst) {
  Tagged t(0x50, 3);
  Thing x[4] = {{0}, {1}, {2}, {3}};
  uint64_t h[3];
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(t.prepare_insert());
    h[i] = t.insert(&x[i]);
    EXPECT_EQ(h[i] >> 56, 0x50u);
  }
  EXPECT_FALSE(t.prepare_insert()) << "capacity reached";
  t.remove(Tagged::index_of(h[0]));
  t.remove(Tagged::index_of(h[2]));
  ASSERT_TRUE(t.prepare_insert());
  uint64_t again = t.insert(&x[3]);
  EXPECT_EQ(Tagged::index_of(again), Tagged::index_of(h[2]));
  EXPECT_EQ(t.find(h[2]).verdict, Tagged::Verdict::Stale);
  EXPECT_EQ(t.at(Tagged::index_of(again)), &x[3]);
  EXPECT_EQ(t.at(7), nullptr);
  int sum = 0;
  t.for_each([&](Thing *p) { sum += p->value; });
  EXPECT_EQ(sum, 1 + 3);
}
