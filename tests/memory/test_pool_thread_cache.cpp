// The pool's thread caches: a thread's own allocate / free cycle, frees from other
// threads, double frees through either path, exact stats, memory handed back when an
// allocation needs it, thread exit, a pool destroyed before its threads, and a
// multi-threaded trace that passes blocks between threads with their contents checked.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <deque>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "memory/quick_cache.hpp"
#include "pool_test_util.hpp"
#include "sizes.hpp"

using namespace zrt;
using pooltest::fails_with;
using pooltest::fill;
using pooltest::holds;
using pooltest::host_pool;

namespace {

std::unique_ptr<Pool> cached_pool(size_t limit, size_t cache_bytes) {
  PoolOptions o;
  o.name = "tc";
  o.limit = limit;
  o.segment_bytes = MiB;
  o.thread_cache_bytes = cache_bytes;
  return std::make_unique<Pool>(std::make_unique<HostResource>(), o);
}

}  // namespace

TEST(PoolThreadCache, AFreedBlockComesBackToItsThreadAndStatsStayExact) {
  auto pool = cached_pool(64 * MiB, 4 * MiB);
  void *a = pool->allocate(1000, Lifetime::Transient);
  pool->free(a);
  // The same size again: the thread's cache hands the same block back.
  void *b = pool->allocate(1000, Lifetime::Transient);
  EXPECT_EQ(a, b);
  void *c = pool->allocate(3000, Lifetime::Transient);
  PoolStats s = pool->stats();
  EXPECT_EQ(s.live, 1024u + 3072u);
  EXPECT_EQ(s.allocations, 2u);
  EXPECT_EQ(s.thread_cached, 0u);  // stats() returned this thread's idle blocks
  EXPECT_EQ(s.free, s.reserved - s.live);
  pool->free(b);
  pool->free(c);
  // A block cached idle is not live: 1 KiB then 2 KiB then 1 KiB again peaks at 3 KiB.
  auto fresh = cached_pool(64 * MiB, 4 * MiB);
  void *x = fresh->allocate(1024, Lifetime::Transient);
  fresh->free(x);
  void *y = fresh->allocate(2048, Lifetime::Transient);
  void *z = fresh->allocate(1024, Lifetime::Transient);  // from the cache
  EXPECT_EQ(z, x);
  EXPECT_EQ(fresh->stats().peak_live, 3072u);
  fresh->free(y);
  fresh->free(z);
  s = fresh->stats();
  EXPECT_EQ(s.live, 0u);
  EXPECT_EQ(s.allocations, 0u);
  fresh->check();
  pool->check();
}

TEST(PoolThreadCache, ASecondFreeIsRefusedOnEitherPath) {
  auto pool = cached_pool(64 * MiB, 4 * MiB);
  void *p = pool->allocate(4096, Lifetime::Long);
  pool->free(p);
  EXPECT_TRUE(fails_with([&] { pool->free(p); }, ZRT_ERR_INVALID_ARGUMENT, "freed twice"));
  // Another thread's second free of a block the owner already cached.
  void *q = pool->allocate(8192, Lifetime::Long);
  pool->free(q);
  bool refused = false;
  std::thread([&] {
    refused = fails_with([&] { pool->free(q); }, ZRT_ERR_INVALID_ARGUMENT, "freed twice");
  }).join();
  EXPECT_TRUE(refused);
  // A pointer into the middle of a cached allocation is not taken for it.
  void *r = pool->allocate(8192, Lifetime::Long);
  EXPECT_TRUE(fails_with([&] { pool->free(static_cast<char *>(r) + 256); },
                         ZRT_ERR_INVALID_ARGUMENT, "points 256 bytes into an allocation"));
  pool->free(r);
  pool->check();
  EXPECT_EQ(pool->stats().live, 0u);
}

// The thread cache files a freed block under the quick-cache slot it noted when the
// block was lent. Two sizes whose classes share a slot must take it in turn: the later
// free hands the other class's blocks back to the pool, and nothing is lost or served
// at the wrong size.
TEST(PoolThreadCache, SizesSharingACacheSlotTakeItInTurn) {
  auto pool = cached_pool(64 * MiB, 4 * MiB);
  const size_t a_size = 1024;
  size_t b_size = 0;
  for (size_t n = 2 * KiB; n < MiB && b_size == 0; n += KiB)
    if (QuickCache::index(n, Lifetime::Transient) == QuickCache::index(a_size, Lifetime::Transient))
      b_size = n;
  ASSERT_NE(b_size, 0u) << "no size below 1 MiB shares 1 KiB's slot";
  void *a = pool->allocate(a_size, Lifetime::Transient);
  fill(a, a_size, 1);
  pool->free(a);  // idle in the slot
  void *b = pool->allocate(b_size, Lifetime::Transient);
  fill(b, b_size, 2);
  pool->free(b);  // takes the slot; a's block goes back to the pool
  void *b2 = pool->allocate(b_size, Lifetime::Transient);
  EXPECT_EQ(b2, b);  // from the cache
  void *a2 = pool->allocate(a_size, Lifetime::Transient);
  EXPECT_NE(a2, b2);
  fill(a2, a_size, 3);
  fill(b2, b_size, 4);
  EXPECT_TRUE(holds(a2, a_size, 3));
  EXPECT_TRUE(holds(b2, b_size, 4));
  PoolStats s = pool->stats();
  EXPECT_EQ(s.live, a_size + b_size);
  EXPECT_EQ(s.allocations, 2u);
  pool->free(b2);
  EXPECT_TRUE(fails_with([&] { pool->free(b2); }, ZRT_ERR_INVALID_ARGUMENT, "freed twice"));
  pool->free(a2);
  EXPECT_TRUE(fails_with([&] { pool->free(a2); }, ZRT_ERR_INVALID_ARGUMENT, "freed twice"));
  pool->check();
  EXPECT_EQ(pool->stats().live, 0u);
}

// A step keeps many blocks of one size live (every layer's activation of one shape). The
// thread cache keeps them all idle when they are freed and hands the same blocks back,
// with no lock: the pool's own bookkeeping does not move between the rounds.
TEST(PoolThreadCache, HundredsOfBlocksOfOneSizeComeBackFromTheCache) {
  auto pool = cached_pool(256 * MiB, 32 * MiB);
  const size_t n = 300, size = 16 * KiB;
  std::vector<void *> first(n), again(n);
  for (auto &p : first)
    p = pool->allocate(size, Lifetime::Transient);
  for (size_t i = 0; i < n; ++i)
    pool->free(first[(i * 7) % n]);  // 7 is prime to 300: every block, shuffled
  for (auto &p : again) {
    p = pool->allocate(size, Lifetime::Transient);
    fill(p, size, 5);
  }
  EXPECT_EQ(std::set<void *>(again.begin(), again.end()),
            std::set<void *>(first.begin(), first.end()));
  for (void *p : again)
    EXPECT_TRUE(holds(p, size, 5));
  pool->check();
  EXPECT_TRUE(fails_with([&] { pool->free(static_cast<char *>(again[0]) + 256); },
                         ZRT_ERR_INVALID_ARGUMENT, "points 256 bytes into an allocation"));
  for (void *p : again)
    pool->free(p);
  EXPECT_TRUE(
      fails_with([&] { pool->free(again[n - 1]); }, ZRT_ERR_INVALID_ARGUMENT, "freed twice"));
  pool->check();
  // Another thread's stats see every block idle in this thread's cache (they stay there
  // until the owner's next call), none merged back into the pool.
  std::thread([&] {
    PoolStats s = pool->stats();
    EXPECT_EQ(s.thread_cached, n * size);
    EXPECT_EQ(s.live, 0u);
  }).join();
  void *p = pool->allocate(size, Lifetime::Transient);  // the owner drains, as asked
  pool->free(p);
  PoolStats s = pool->stats();
  EXPECT_EQ(s.live, 0u);
  EXPECT_EQ(s.thread_cached, 0u);
  pool->check();
}

TEST(PoolThreadCache, BlocksFreedByAnotherThreadReturnAtTheOwnersNextCall) {
  auto pool = cached_pool(64 * MiB, 4 * MiB);
  std::vector<void *> blocks;
  for (int i = 0; i < 100; ++i) {
    blocks.push_back(pool->allocate(512 + 256 * (i % 7), Lifetime::Transient));
    fill(blocks.back(), 512, static_cast<uint64_t>(i));
  }
  std::thread([&] {
    for (size_t i = 0; i < blocks.size(); ++i) {
      EXPECT_TRUE(holds(blocks[i], 512, i));
      pool->free(blocks[i]);
    }
    // The freer's second free of one of them is refused while it waits for its owner.
    EXPECT_TRUE(
        fails_with([&] { pool->free(blocks[7]); }, ZRT_ERR_INVALID_ARGUMENT, "freed twice"));
  }).join();
  pool->check();
  // The owner's next call returns them; nothing is lost or double counted.
  void *p = pool->allocate(512, Lifetime::Transient);
  pool->free(p);
  PoolStats s = pool->stats();
  EXPECT_EQ(s.live, 0u);
  EXPECT_EQ(s.allocations, 0u);
  pool->check();
}

TEST(PoolThreadCache, AnAllocationThatNeedsTheCachedMemoryGetsIt) {
  // 8 MiB of pool, 8 MiB of cache budget (blocks up to 4 MiB are cached).
  auto pool = cached_pool(8 * MiB, 8 * MiB);
  std::vector<void *> blocks;
  for (int i = 0; i < 4; ++i)
    blocks.push_back(pool->allocate(2 * MiB, Lifetime::Transient));
  for (void *p : blocks)
    pool->free(p);  // all four wait idle in this thread's cache
  void *all = pool->allocate(8 * MiB, Lifetime::Transient);
  ASSERT_NE(all, nullptr);
  pool->free(all);
  pool->check();
}

TEST(PoolThreadCache, OtherThreadsIdleBlocksAreReportedAndReturnWhenAsked) {
  auto pool = cached_pool(64 * MiB, 4 * MiB);
  std::barrier sync(2);
  std::thread worker([&] {
    void *p = pool->allocate(64 * KiB, Lifetime::Transient);
    pool->free(p);  // idle in the worker's cache
    sync.arrive_and_wait();
    sync.arrive_and_wait();  // main read the stats, which asked the worker to flush
    void *q = pool->allocate(128 * KiB, Lifetime::Transient);  // flushes first
    pool->free(q);
    sync.arrive_and_wait();
    sync.arrive_and_wait();
  });
  sync.arrive_and_wait();
  PoolStats s = pool->stats();
  EXPECT_EQ(s.thread_cached, 64 * KiB);
  EXPECT_EQ(s.live, 0u);
  EXPECT_EQ(s.free + s.live + s.thread_cached, s.reserved);
  sync.arrive_and_wait();
  sync.arrive_and_wait();
  EXPECT_EQ(pool->stats().thread_cached, 128 * KiB);  // the flush took the 64 KiB block
  sync.arrive_and_wait();
  worker.join();
  // Thread exit returned the rest.
  s = pool->stats();
  EXPECT_EQ(s.thread_cached, 0u);
  EXPECT_EQ(s.live, 0u);
  pool->check();
}

TEST(PoolThreadCache, AnExitingThreadsLiveBlocksStayAllocatedAndFreeable) {
  auto pool = cached_pool(64 * MiB, 4 * MiB);
  std::vector<void *> kept;
  std::thread([&] {
    std::vector<void *> mine;
    for (int i = 0; i < 10; ++i)
      mine.push_back(pool->allocate(4 * KiB, Lifetime::Long));
    for (int i = 0; i < 10; ++i) {
      if (i % 2 == 0) {
        pool->free(mine[static_cast<size_t>(i)]);
      } else {
        fill(mine[static_cast<size_t>(i)], 4 * KiB, static_cast<uint64_t>(i));
        kept.push_back(mine[static_cast<size_t>(i)]);
      }
    }
  }).join();
  PoolStats s = pool->stats();
  EXPECT_EQ(s.live, 5 * 4 * KiB);
  EXPECT_EQ(s.thread_cached, 0u);
  pool->check();
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_TRUE(holds(kept[i], 4 * KiB, 2 * i + 1));
    pool->free(kept[i]);
  }
  EXPECT_TRUE(fails_with([&] { pool->free(kept[0]); }, ZRT_ERR_INVALID_ARGUMENT, "freed twice"));
  EXPECT_EQ(pool->stats().live, 0u);
  pool->check();
}

TEST(PoolThreadCache, APoolDestroyedBeforeItsThreadsLeavesThemNothingToTouch) {
  auto pool = cached_pool(64 * MiB, 4 * MiB);
  std::barrier sync(2);
  std::thread worker([&] {
    void *p = pool->allocate(4 * KiB, Lifetime::Transient);
    pool->free(p);
    sync.arrive_and_wait();
    sync.arrive_and_wait();  // the pool is gone; this thread's exit must not touch it
    // A new pool, likely at the same address, is not mistaken for the old one.
    auto again = cached_pool(64 * MiB, 4 * MiB);
    void *q = again->allocate(4 * KiB, Lifetime::Transient);
    again->free(q);
    again->check();
  });
  sync.arrive_and_wait();
  pool.reset();
  sync.arrive_and_wait();
  worker.join();
}

TEST(PoolThreadCache, ThreadsPassingBlocksAroundKeepEveryInvariant) {
  auto pool = cached_pool(256 * MiB, 2 * MiB);
  struct Item {
    void *p;
    size_t n;
    uint64_t seed;
  };
  std::mutex m;
  std::deque<Item> shared;  // blocks one thread allocated and another may free
  constexpr int kThreads = 4, kOps = 20000;
  std::atomic<int> errors{0};
  auto work = [&](int t) {
    std::mt19937_64 rng(static_cast<uint64_t>(t) + 11);
    std::vector<Item> mine;
    for (int op = 0; op < kOps; ++op) {
      int what = static_cast<int>(rng() % 10);
      if (what < 4 || mine.empty()) {
        size_t n = size_t{64} << (rng() % 12);  // 64 B .. 128 KiB
        uint64_t seed = rng();
        void *p = pool->allocate(n, rng() % 2 ? Lifetime::Long : Lifetime::Transient);
        fill(p, n, seed);
        mine.push_back({p, n, seed});
      } else if (what < 6) {
        std::lock_guard lock(m);
        shared.push_back(mine.back());
        mine.pop_back();
      } else {
        Item it = mine.back();
        mine.pop_back();
        if (what < 8) {
          std::lock_guard lock(m);
          if (!shared.empty()) {
            mine.push_back(it);
            it = shared.front();
            shared.pop_front();
          }
        }
        if (!holds(it.p, it.n, it.seed)) ++errors;
        pool->free(it.p);
      }
    }
    for (const Item &it : mine) {
      if (!holds(it.p, it.n, it.seed)) ++errors;
      pool->free(it.p);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back(work, t);
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(errors.load(), 0);
  pool->check();
  for (const Item &it : shared) {
    EXPECT_TRUE(holds(it.p, it.n, it.seed));
    pool->free(it.p);
  }
  PoolStats s = pool->stats();
  EXPECT_EQ(s.live, 0u);
  EXPECT_EQ(s.allocations, 0u);
  EXPECT_EQ(s.thread_cached, 0u);
  pool->check();
}

TEST(PoolThreadCache, ZeroBytesOfCacheTurnsItOff) {
  auto pool = cached_pool(64 * MiB, 0);
  void *a = pool->allocate(1000, Lifetime::Transient);
  pool->free(a);
  EXPECT_TRUE(fails_with([&] { pool->free(a); }, ZRT_ERR_INVALID_ARGUMENT, "freed twice"));
  pool->check();
  (void)host_pool;
}
