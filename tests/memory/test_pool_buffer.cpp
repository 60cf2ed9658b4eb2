// The owning handles the engine allocates through: freed on scope exit, movable-only,
// and a lock that keeps a movable buffer in place while compaction runs.
#include <gtest/gtest.h>

#include "memory/pool_buffer.hpp"
#include "pool_test_util.hpp"

using namespace zrt;

TEST(PoolBuffer, OwnersFreeOnScopeExitAndMove) {
  auto pool = pooltest::host_pool(64 << 20);
  {
    PoolAllocation a = PoolAllocation::allocate(*pool, 1000, Lifetime::Long);
    PoolBuffer b = PoolBuffer::allocate(*pool, 2000, Lifetime::Transient);
    EXPECT_EQ(pool->stats().allocations, 2u);
    EXPECT_EQ(a.size(), 1000u);
    EXPECT_EQ(b.size(), 2000u);
    PoolAllocation moved = std::move(a);
    EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    EXPECT_TRUE(moved);
    moved.as<char>()[999] = 1;
    b.as<char>()[1999] = 2;
    PoolBuffer other;
    other = std::move(b);
    EXPECT_EQ(other.as<char>()[1999], 2);
    EXPECT_EQ(pool->stats().allocations, 2u);
  }
  EXPECT_EQ(pool->stats().allocations, 0u);
  pool->check();
}

TEST(PoolBuffer, ALockKeepsTheBufferInPlaceAcrossCompaction) {
  auto pool = pooltest::host_pool(64 << 20);
  PoolBuffer gap = PoolBuffer::allocate(*pool, 64 << 10, Lifetime::Long);
  PoolBuffer state = PoolBuffer::allocate(*pool, 64 << 10, Lifetime::Long);
  pooltest::fill(state.data(), 64 << 10, 5);
  gap.reset();
  void *before = state.data();
  {
    PoolBuffer::Lock held = state.lock();
    EXPECT_EQ(pool->defragment(), 0u);
    EXPECT_EQ(held.data(), before);
  }
  EXPECT_GT(pool->defragment(), 0u);
  EXPECT_NE(state.data(), before);
  EXPECT_TRUE(pooltest::holds(state.data(), 64 << 10, 5));
}
