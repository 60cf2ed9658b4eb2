// The defragmenting pool: placement by lifetime, best fit and coalescing, growth, random
// traces checked against a shadow model, compaction on a trace that defeats plain best
// fit, trimming, stats, and every bad input the pool must survive.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "memory/poison.hpp"
#include "pool_test_util.hpp"
#include "runtime/format_bytes.hpp"
#include "runtime/log.hpp"
#include "sizes.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

using namespace zrt;
using pooltest::fails_with;
using pooltest::fill;
using pooltest::holds;
using pooltest::host_pool;

namespace {}

TEST(Pool, LongLivedPacksLowTransientPacksHigh) {
  auto pool = host_pool(64 * MiB);
  void *a = pool->allocate(100, Lifetime::Long);
  void *b = pool->allocate(1000, Lifetime::Long);
  void *t1 = pool->allocate(5000, Lifetime::Transient);
  void *t2 = pool->allocate(300, Lifetime::Transient);
  auto addr = [](void *p) { return reinterpret_cast<uintptr_t>(p); };
  for (void *p : {a, b, t1, t2})
    EXPECT_EQ(addr(p) % 256, 0u);
  // Long-lived ones climb from the bottom, transient ones descend from the top.
  EXPECT_EQ(addr(b), addr(a) + 256);
  EXPECT_GT(addr(t1), addr(b) + 16 * MiB);
  EXPECT_EQ(addr(t2) + 512, addr(t1));
  PoolStats s = pool->stats();
  EXPECT_EQ(s.live, 256u + 1024u + 5120u + 512u);
  EXPECT_EQ(s.allocations, 4u);
  // One segment committed at each end, not the whole 64 MiB.
  EXPECT_EQ(s.reserved, 2 * MiB);
  EXPECT_EQ(s.free, s.reserved - s.live);
  pool->check();
  for (void *p : {a, t2, b, t1})
    pool->free(p);
  s = pool->stats();
  EXPECT_EQ(s.live, 0u);
  EXPECT_EQ(s.peak_live, 256u + 1024u + 5120u + 512u);
  // Freed neighbours merged back into one block per committed side.
  EXPECT_EQ(s.largest_free, MiB);
  pool->check();
}

TEST(Pool, BestFitPicksTheSmallestHoleAndMergesNeighbours) {
  auto pool = host_pool(64 * MiB);
  std::vector<void *> p;
  for (size_t kib : {64, 16, 64, 32, 64, 24, 64})
    p.push_back(pool->allocate(kib * KiB, Lifetime::Long));
  pool->free(p[1]);  // 16 KiB hole
  pool->free(p[3]);  // 32 KiB hole
  pool->free(p[5]);  // 24 KiB hole
  pool->stats();     // drains the quick cache: the freed blocks join the free bins
  // 20 KiB fits the 24 and 32 KiB holes; best fit takes the 24 KiB one.
  void *q = pool->allocate(20 * KiB, Lifetime::Long);
  EXPECT_EQ(q, p[5]);
  pool->free(q);
  // Freeing the blocks between holes merges them into one.
  pool->free(p[2]);
  pool->stats();
  void *big = pool->allocate(16 * KiB + 64 * KiB + 32 * KiB, Lifetime::Long);
  EXPECT_EQ(big, p[1]);
  pool->check();
}

TEST(Pool, GrowsByWholeSegmentsAndStopsAtTheLimit) {
  auto pool = host_pool(8 * MiB, 2 * MiB);
  void *a = pool->allocate(3 * MiB, Lifetime::Long);
  EXPECT_EQ(pool->stats().reserved, 4 * MiB);
  void *b = pool->allocate(3 * MiB, Lifetime::Transient);
  EXPECT_EQ(pool->stats().reserved, 8 * MiB);
  EXPECT_TRUE(fails_with([&] { pool->allocate(3 * MiB, Lifetime::Long); }, ZRT_ERR_OUT_OF_MEMORY,
                         "reached its limit of 8 MiB"));
  // The two partly used sides still serve what fits in them.
  void *c = pool->allocate(MiB, Lifetime::Long);
  void *d = pool->allocate(MiB, Lifetime::Transient);
  EXPECT_EQ(pool->stats().out_of_memory, 1u);
  for (void *p : {a, b, c, d})
    pool->free(p);
  pool->check();
}

TEST(Pool, MeetingSidesCoalesce) {
  // A long-lived and a transient request that together fill the arena leave no gap;
  // freeing both must give one block spanning the whole arena.
  auto pool = host_pool(4 * MiB, MiB);
  void *lo = pool->allocate(2 * MiB + 4 * KiB, Lifetime::Long);
  void *hi = pool->allocate(MiB + 512 * KiB, Lifetime::Transient);
  pool->free(lo);
  pool->free(hi);
  pool->check();
  void *all = pool->allocate(4 * MiB, Lifetime::Long);
  EXPECT_NE(all, nullptr);
  pool->free(all);
  pool->check();
}

TEST(Pool, MovableBuffersKeepTheirContentsAcrossCompaction) {
  auto pool = host_pool(64 * MiB);
  std::vector<BufferId> ids;
  for (int i = 0; i < 20; ++i) {
    ids.push_back(pool->allocate_movable((i % 5 + 1) * 10 * KiB + 7, Lifetime::Long));
    fill(pool->pointer(ids.back()), (i % 5 + 1) * 10 * KiB + 7, i);
  }
  void *raw = pool->allocate(50 * KiB, Lifetime::Long);
  for (int i = 0; i < 20; i += 2)
    pool->free(ids[i]);
  uint64_t before = pool->generation();
  size_t moved = pool->defragment();
  EXPECT_GT(moved, 0u);
  EXPECT_EQ(pool->generation(), before + 1);
  for (int i = 1; i < 20; i += 2) {
    size_t n = 0;
    void *p = pool->pointer(ids[i], &n);
    EXPECT_EQ(n, (i % 5 + 1) * 10 * KiB + 7);
    EXPECT_TRUE(holds(p, n, i)) << "buffer " << i << " lost its contents";
  }
  pool->check();
  PoolStats s = pool->stats();
  EXPECT_EQ(s.compactions, 1u);
  EXPECT_EQ(s.moved_bytes, moved);
  // Nothing left to move: a second pass moves nothing and keeps the generation.
  EXPECT_EQ(pool->defragment(), 0u);
  EXPECT_EQ(pool->generation(), before + 1);
  pool->free(raw);
}

TEST(Pool, RawAndLockedAllocationsNeverMove) {
  auto pool = host_pool(64 * MiB);
  BufferId hole = pool->allocate_movable(100 * KiB, Lifetime::Long);
  void *raw = pool->allocate(10 * KiB, Lifetime::Long);
  BufferId hole2 = pool->allocate_movable(100 * KiB, Lifetime::Long);
  BufferId locked = pool->allocate_movable(10 * KiB, Lifetime::Long);
  BufferId free_to_move = pool->allocate_movable(10 * KiB, Lifetime::Long);
  pool->free(hole);
  pool->free(hole2);
  void *held = pool->lock(locked);
  void *before = pool->pointer(free_to_move);
  EXPECT_GT(pool->defragment(), 0u);
  EXPECT_EQ(pool->pointer(locked), held);
  EXPECT_NE(pool->pointer(free_to_move), before);
  // The raw block stays where it was, so the movable one packed into the first hole.
  EXPECT_LT(reinterpret_cast<uintptr_t>(pool->pointer(free_to_move)),
            reinterpret_cast<uintptr_t>(raw));
  pool->unlock(locked);
  pool->free(locked);
  pool->free(free_to_move);
  pool->free(raw);
  pool->check();
}

TEST(Pool, TransientBuffersCompactTowardsTheHighEnd) {
  auto pool = host_pool(64 * MiB);
  std::vector<BufferId> t;
  for (int i = 0; i < 8; ++i) {
    t.push_back(pool->allocate_movable(64 * KiB, Lifetime::Transient));
    fill(pool->pointer(t.back()), 64 * KiB, 100 + i);
  }
  uintptr_t top = reinterpret_cast<uintptr_t>(pool->pointer(t[0]));
  for (int i = 0; i < 8; i += 2)
    pool->free(t[i]);
  pool->defragment();
  // The survivors now sit right under the top, densely.
  std::vector<uintptr_t> at;
  for (int i = 1; i < 8; i += 2) {
    at.push_back(reinterpret_cast<uintptr_t>(pool->pointer(t[i])));
    EXPECT_TRUE(holds(pool->pointer(t[i]), 64 * KiB, 100 + i));
  }
  std::sort(at.begin(), at.end());
  EXPECT_EQ(at.back(), top);
  for (size_t i = 1; i < at.size(); ++i)
    EXPECT_EQ(at[i] - at[i - 1], 64 * KiB);
  for (int i = 1; i < 8; i += 2)
    pool->free(t[i]);
  pool->check();
}

// The fragmentation trace: interleaved lifetimes leave half the pool free in
// holes; plain best fit (compaction off) fails a large request, the pool compacts and
// serves it.
TEST(Pool, FragmentationDefeatsPlainBestFitButNotThePool) {
  for (CompactPolicy policy : {CompactPolicy::Off, CompactPolicy::Auto}) {
    SCOPED_TRACE(compact_name(policy));
    auto pool = host_pool(16 * MiB, MiB, policy);
    std::vector<BufferId> blocks;
    for (int i = 0; i < 64; ++i) {
      blocks.push_back(pool->allocate_movable(256 * KiB, Lifetime::Long));
      fill(pool->pointer(blocks.back()), 256 * KiB, i);
    }
    for (int i = 0; i < 64; i += 2)
      pool->free(blocks[i]);
    PoolStats s = pool->stats();
    EXPECT_EQ(s.free, 8 * MiB);
    EXPECT_EQ(s.largest_free, 256 * KiB);
    EXPECT_GT(s.fragmentation, 0.95);
    if (policy == CompactPolicy::Off) {
      EXPECT_TRUE(fails_with([&] { pool->allocate(4 * MiB, Lifetime::Long); },
                             ZRT_ERR_OUT_OF_MEMORY, "fragmented and compaction is off"));
      EXPECT_EQ(pool->stats().compactions, 0u);
    } else {
      void *big = pool->allocate(4 * MiB, Lifetime::Long);
      ASSERT_NE(big, nullptr);
      s = pool->stats();
      EXPECT_EQ(s.compactions, 1u);
      EXPECT_EQ(s.generation, 1u);
      for (int i = 1; i < 64; i += 2)
        EXPECT_TRUE(holds(pool->pointer(blocks[i]), 256 * KiB, i)) << "block " << i;
      pool->free(big);
    }
    pool->check();
    for (int i = 1; i < 64; i += 2)
      pool->free(blocks[i]);
  }
}

TEST(Pool, EagerCompactionPrefersMovingToGrowing) {
  auto pool = host_pool(64 * MiB, MiB, CompactPolicy::Eager);
  std::vector<BufferId> blocks;
  for (int i = 0; i < 16; ++i)
    blocks.push_back(pool->allocate_movable(256 * KiB, Lifetime::Long));
  for (int i = 0; i < 16; i += 2)
    pool->free(blocks[i]);
  size_t reserved = pool->stats().reserved;
  void *p = pool->allocate(MiB, Lifetime::Long);
  EXPECT_EQ(pool->stats().reserved, reserved);  // served from compacted holes
  EXPECT_EQ(pool->stats().compactions, 1u);
  pool->free(p);
  for (int i = 1; i < 16; i += 2)
    pool->free(blocks[i]);
  pool->check();
}

TEST(Pool, TrimReturnsFreeSegmentsAndThePoolStillWorks) {
  auto pool = host_pool(64 * MiB, MiB);
  void *a = pool->allocate(5 * MiB, Lifetime::Long);
  void *b = pool->allocate(3 * MiB, Lifetime::Transient);
  void *keep = pool->allocate(KiB, Lifetime::Long);
  EXPECT_EQ(pool->stats().reserved, 9 * MiB);
  pool->free(a);
  pool->free(b);
  size_t released = pool->trim();
  PoolStats s = pool->stats();
  EXPECT_EQ(released, 9 * MiB - s.reserved);
  // Only the pages under the long-lived kilobyte stay.
  EXPECT_LE(s.reserved, 5 * MiB + 4 * KiB + s.live);
  EXPECT_GE(s.reserved, s.live);
  pool->check();
  void *again = pool->allocate(7 * MiB, Lifetime::Transient);
  fill(again, 7 * MiB, 7);
  EXPECT_TRUE(holds(again, 7 * MiB, 7));
  pool->free(again);
  pool->free(keep);
  pool->trim();
  EXPECT_EQ(pool->stats().reserved, 0u);
  pool->check();
}

TEST(Pool, TrimOpensTheMiddleOfAFullArena) {
  auto pool = host_pool(4 * MiB, MiB);
  void *lo = pool->allocate(MiB, Lifetime::Long);
  void *mid = pool->allocate(2 * MiB, Lifetime::Long);
  void *hi = pool->allocate(MiB, Lifetime::Transient);
  EXPECT_EQ(pool->stats().reserved, 4 * MiB);
  pool->free(mid);
  EXPECT_EQ(pool->trim(), 2 * MiB);
  pool->check();
  void *again = pool->allocate(2 * MiB, Lifetime::Long);
  pool->free(again);
  pool->free(lo);
  pool->free(hi);
  pool->check();
}

TEST(Pool, SegmentedArenaGrowsBySegmentsAndTrimsWholeFreeOnes) {
  auto pool = host_pool(8 * MiB, 2 * MiB, CompactPolicy::Auto, 256, pooltest::Arena::Segmented);
  void *a = pool->allocate(MiB, Lifetime::Long);
  void *b = pool->allocate(MiB, Lifetime::Transient);  // the same segment's other end
  EXPECT_EQ(pool->stats().reserved, 2 * MiB);
  EXPECT_EQ(pool->stats().segments, 1u);
  void *big = pool->allocate(3 * MiB, Lifetime::Long);  // a segment of its own size
  PoolStats s = pool->stats();
  EXPECT_EQ(s.reserved, 5 * MiB);
  EXPECT_EQ(s.segments, 2u);
  EXPECT_TRUE(fails_with([&] { pool->allocate(4 * MiB, Lifetime::Long); }, ZRT_ERR_OUT_OF_MEMORY,
                         "reached its limit of 8 MiB"));
  // What is left of the limit still makes a segment.
  void *rest = pool->allocate(3 * MiB, Lifetime::Transient);
  EXPECT_EQ(pool->stats().reserved, 8 * MiB);
  pool->free(big);
  pool->free(a);
  EXPECT_EQ(pool->trim(), 3 * MiB);  // only the segment that is wholly free
  s = pool->stats();
  EXPECT_EQ(s.reserved, 5 * MiB);
  EXPECT_EQ(s.segments, 2u);
  pool->check();
  for (void *p : {b, rest})
    pool->free(p);
  EXPECT_EQ(pool->trim(), 5 * MiB);
  EXPECT_EQ(pool->stats().segments, 0u);
  pool->check();
}

TEST(Pool, SegmentedArenaCompactsWithinEachSegment) {
  auto pool = host_pool(8 * MiB, 2 * MiB, CompactPolicy::Auto, 256, pooltest::Arena::Segmented);
  std::vector<BufferId> ids;
  for (int i = 0; i < 12; ++i) {
    ids.push_back(pool->allocate_movable(256 * KiB, Lifetime::Long));
    fill(pool->pointer(ids.back()), 256 * KiB, static_cast<uint64_t>(i));
  }
  EXPECT_EQ(pool->stats().segments, 2u);
  for (int i = 0; i < 12; i += 2)
    pool->free(ids[i]);
  EXPECT_GT(pool->defragment(), 0u);
  PoolStats s = pool->stats();
  EXPECT_EQ(s.largest_free, MiB + 512 * KiB);  // each segment's free memory in one piece
  for (int i = 1; i < 12; i += 2) {
    EXPECT_TRUE(holds(pool->pointer(ids[i]), 256 * KiB, static_cast<uint64_t>(i))) << i;
    pool->free(ids[i]);
  }
  pool->check();
}

// A trace shaped like training: parameters, gradients and optimizer state once, then
// per iteration each layer's activations in forward and, in backward, the activations
// freed in reverse while gradient buckets come and go. The pool should reserve hardly
// more than the live peak.
TEST(Pool, TrainingTraceReservesLittleMoreThanItsLivePeak) {
  auto pool = host_pool(size_t{8} << 30, 2 * MiB);
  std::mt19937_64 rng(7);
  const int layers = 12;
  std::vector<void *> state;
  for (int l = 0; l < layers; ++l)
    for (size_t bytes : {size_t{2359296}, size_t{9437184}, size_t{3072}, size_t{9437184}})
      for (int copies = 0; copies < 4; ++copies)  // weights, grads, Adam m and v
        state.push_back(pool->allocate(bytes + rng() % 4096, Lifetime::Long));
  for (int iteration = 0; iteration < 3; ++iteration) {
    std::vector<std::vector<void *>> acts(layers);
    for (int l = 0; l < layers; ++l)
      for (size_t bytes : {size_t{3} << 20, size_t{12} << 20, size_t{3} << 20})
        acts[l].push_back(pool->allocate(bytes, Lifetime::Transient));
    for (int l = layers - 1; l >= 0; --l) {
      void *bucket = pool->allocate(25 * MiB, Lifetime::Transient);
      for (void *p : acts[l])
        pool->free(p);
      void *workspace = pool->allocate(1 * MiB + rng() % MiB, Lifetime::Transient);
      pool->free(workspace);
      pool->free(bucket);
    }
  }
  PoolStats s = pool->stats();
  double ratio = static_cast<double>(s.peak_reserved) / static_cast<double>(s.peak_live);
  EXPECT_LE(ratio, 1.05) << s.summary();
  EXPECT_EQ(s.compactions, 0u);
  for (void *p : state)
    pool->free(p);
  pool->check();
}

// --- seeded random traces -------------------------------------------------------------

namespace {

struct Live {
  bool movable;
  void *ptr;  // raw
  BufferId id;
  size_t bytes;
  Lifetime lifetime;
  uint64_t seed;
};

size_t random_size(std::mt19937_64 &rng) {
  // Log-uniform from 1 byte to 256 KiB, and now and then a large one.
  if (rng() % 50 == 0) return 256 * KiB + rng() % (3 * MiB);
  double e = std::uniform_real_distribution<double>(0, 18)(rng);
  return std::max<size_t>(1, static_cast<size_t>(std::exp2(e)));
}

void *address(Pool &pool, const Live &l) {
  return l.movable ? pool.pointer(l.id) : l.ptr;
}

// Everything the model knows must match the pool: addresses aligned and disjoint,
// contents intact, stats consistent with the live set.
void verify(Pool &pool, const std::vector<Live> &live, size_t alignment) {
  pool.check();
  std::vector<std::pair<uintptr_t, size_t>> ranges;
  size_t live_bytes = 0, movable = 0;
  for (const Live &l : live) {
    auto p = reinterpret_cast<uintptr_t>(address(pool, l));
    ASSERT_EQ(p % alignment, 0u);
    ASSERT_TRUE(holds(address(pool, l), l.bytes, l.seed)) << "contents lost, seed " << l.seed;
    ranges.push_back({p, l.bytes});
    live_bytes += (l.bytes + alignment - 1) / alignment * alignment;
    movable += l.movable ? 1 : 0;
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    ASSERT_GE(ranges[i].first, ranges[i - 1].first + ranges[i - 1].second) << "overlap";
  PoolStats s = pool.stats();
  ASSERT_EQ(s.live, live_bytes);
  ASSERT_EQ(s.allocations, live.size());
  ASSERT_EQ(s.movable_allocations, movable);
  ASSERT_EQ(s.free, s.reserved - s.live);
  ASSERT_LE(s.largest_free, s.free);
  ASSERT_GE(s.fragmentation, 0.0);
  ASSERT_LE(s.fragmentation, 1.0);
  ASSERT_LE(s.reserved, s.peak_reserved);
  ASSERT_LE(s.live, s.peak_live);
  ASSERT_LE(s.reserved, s.limit);
}

}  // namespace

struct TraceCase {
  int seed;
  pooltest::Arena arena;
};

class PoolTrace : public ::testing::TestWithParam<TraceCase> {};

TEST_P(PoolTrace, HundredThousandRandomOperationsKeepEveryInvariant) {
  const int seed = GetParam().seed;
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  // Seeds differ in alignment and policy too, so the trace covers both.
  const size_t alignment = seed % 2 == 0 ? 256 : 64;
  const CompactPolicy policy = seed % 3 == 0 ? CompactPolicy::Eager : CompactPolicy::Auto;
  auto pool = host_pool(48 * MiB, MiB, policy, alignment, GetParam().arena);
  std::vector<Live> live;
  std::vector<BufferId> locked;
  uint64_t next_seed = 1, ooms = 0, compactions_seen = 0;
  size_t live_bytes = 0;
  // Out-of-memory failures are expected here; their warnings would drown the output.
  zrt::log::Level level = zrt::log::level();
  zrt::log::set_level(ZRT_LOG_ERROR);
  for (int op = 0; op < 100000; ++op) {
    // Allocate more while the pool is under 70% full, free more above: the trace keeps
    // the pool near full, fragmented, and now and then unable to serve a request.
    unsigned r = static_cast<unsigned>(rng() % 1000);
    unsigned alloc_share = live_bytes < 34 * MiB ? 540 : 440;
    if (r < alloc_share || live.empty()) {
      Live l{};
      l.movable = rng() % 2 == 0;
      l.bytes = random_size(rng);
      l.lifetime = rng() % 3 == 0 ? Lifetime::Long : Lifetime::Transient;
      l.seed = next_seed++;
      uint64_t generation = pool->generation();
      try {
        if (l.movable)
          l.id = pool->allocate_movable(l.bytes, l.lifetime);
        else
          l.ptr = pool->allocate(l.bytes, l.lifetime);
      } catch (const Error &e) {
        ASSERT_EQ(e.status(), ZRT_ERR_OUT_OF_MEMORY) << e.what();
        ASSERT_NE(std::string(e.what()).find("largest free block"), std::string::npos);
        ++ooms;
        continue;
      }
      fill(address(*pool, l), l.bytes, l.seed);
      live.push_back(l);
      live_bytes += l.bytes;
      if (pool->generation() != generation) {
        ++compactions_seen;
        verify(*pool, live, alignment);  // an allocation compacted: everything still there
      }
    } else if (r < 970) {
      size_t i = rng() % live.size();
      const Live &l = live[i];
      ASSERT_TRUE(holds(address(*pool, l), l.bytes, l.seed)) << "op " << op;
      bool is_locked = l.movable && std::find(locked.begin(), locked.end(), l.id) != locked.end();
      if (is_locked) {
        pool->unlock(l.id);
        locked.erase(std::find(locked.begin(), locked.end(), l.id));
      }
      if (l.movable)
        pool->free(l.id);
      else
        pool->free(l.ptr);
      live_bytes -= l.bytes;
      live[i] = live.back();
      live.pop_back();
    } else if (r < 990) {
      // Lock a movable buffer (it must not move until unlocked), or unlock one.
      if (!locked.empty() && rng() % 2 == 0) {
        pool->unlock(locked.back());
        locked.pop_back();
      } else {
        for (const Live &l : live)
          if (l.movable && std::find(locked.begin(), locked.end(), l.id) == locked.end()) {
            pool->lock(l.id);
            locked.push_back(l.id);
            break;
          }
      }
    } else if (r < 995) {
      std::vector<void *> pinned;
      for (BufferId id : locked)
        pinned.push_back(pool->pointer(id));
      uint64_t generation = pool->generation();
      size_t moved = pool->defragment();
      ASSERT_EQ(pool->generation(), generation + (moved > 0 ? 1 : 0));
      for (size_t k = 0; k < locked.size(); ++k)
        ASSERT_EQ(pool->pointer(locked[k]), pinned[k]) << "a locked buffer moved";
      verify(*pool, live, alignment);
    } else {
      size_t before = pool->stats().reserved;
      size_t released = pool->trim();
      ASSERT_EQ(pool->stats().reserved, before - released);
    }
    if (op % 5000 == 0) verify(*pool, live, alignment);
  }
  zrt::log::set_level(level);
  verify(*pool, live, alignment);
  PoolStats s = pool->stats();
  std::printf(
      "seed %d: %llu failed allocations, %llu compactions (%llu inside an allocation), "
      "peak live %s, peak reserved %s\n",
      seed, static_cast<unsigned long long>(ooms), static_cast<unsigned long long>(s.compactions),
      static_cast<unsigned long long>(compactions_seen), format_bytes(s.peak_live).c_str(),
      format_bytes(s.peak_reserved).c_str());
  // The trace is sized to fill the pool: it must have exercised the failure path and
  // automatic compaction, or it tested less than it claims.
  EXPECT_GT(ooms, 0u);
  EXPECT_GT(pool->stats().compactions, 0u);
  for (BufferId id : locked)
    pool->unlock(id);
  for (const Live &l : live) {
    if (l.movable)
      pool->free(l.id);
    else
      pool->free(l.ptr);
  }
  EXPECT_EQ(pool->stats().live, 0u);
  pool->check();
}

// Each seed on both arenas: one reserved range (host memory) and a mapping per segment
// (the shape of the CUDA resources).
INSTANTIATE_TEST_SUITE_P(Seeds, PoolTrace,
                         ::testing::Values(TraceCase{1, pooltest::Arena::Reserving},
                                           TraceCase{2, pooltest::Arena::Reserving},
                                           TraceCase{3, pooltest::Arena::Reserving},
                                           TraceCase{1, pooltest::Arena::Segmented},
                                           TraceCase{2, pooltest::Arena::Segmented},
                                           TraceCase{3, pooltest::Arena::Segmented}),
                         [](const ::testing::TestParamInfo<TraceCase> &info) {
                           return std::string(pooltest::arena_name(info.param.arena)) +
                                  std::to_string(info.param.seed);
                         });

// --- bad input ------------------------------------------------------------------------

TEST(PoolBadInput, EveryMistakeIsAClearErrorAndChangesNothing) {
  auto pool = host_pool(16 * MiB);
  auto other = host_pool(16 * MiB);
  void *a = pool->allocate(1000, Lifetime::Long);
  BufferId m = pool->allocate_movable(2000, Lifetime::Long);
  BufferId foreign = other->allocate_movable(64, Lifetime::Long);
  void *gone = pool->allocate(4000, Lifetime::Transient);
  pool->free(gone);
  PoolStats before = pool->stats();

  EXPECT_TRUE(fails_with([&] { pool->allocate(0, Lifetime::Long); }, ZRT_ERR_INVALID_ARGUMENT,
                         "bytes is 0"));
  EXPECT_TRUE(fails_with([&] { pool->allocate_movable(0, Lifetime::Long); },
                         ZRT_ERR_INVALID_ARGUMENT, "bytes is 0"));
  EXPECT_TRUE(fails_with([&] { pool->allocate(SIZE_MAX, Lifetime::Long); }, ZRT_ERR_OUT_OF_MEMORY,
                         "exceeds the pool's limit of 16 MiB"));
  EXPECT_TRUE(fails_with([&] { pool->allocate(16 * MiB + 1, Lifetime::Transient); },
                         ZRT_ERR_OUT_OF_MEMORY, "exceeds the pool's limit"));
  EXPECT_TRUE(fails_with([&] { pool->free(gone); }, ZRT_ERR_INVALID_ARGUMENT, "freed twice?"));
  int on_stack = 0;
  EXPECT_TRUE(fails_with([&] { pool->free(&on_stack); }, ZRT_ERR_INVALID_ARGUMENT,
                         "was not allocated by pool 'test'"));
  EXPECT_TRUE(fails_with([&] { pool->free(static_cast<char *>(a) + 64); }, ZRT_ERR_INVALID_ARGUMENT,
                         "points 64 bytes into an allocation"));
  EXPECT_TRUE(fails_with([&] { pool->free(pool->pointer(m)); }, ZRT_ERR_INVALID_ARGUMENT,
                         "movable buffer"));
  EXPECT_TRUE(fails_with([&] { pool->free(nullptr); }, ZRT_ERR_INVALID_ARGUMENT, "ptr is NULL"));
  EXPECT_TRUE(
      fails_with([&] { pool->free(BufferId{}); }, ZRT_ERR_INVALID_HANDLE, "NULL buffer handle"));
  EXPECT_TRUE(fails_with([&] { pool->free(foreign); }, ZRT_ERR_INVALID_HANDLE,
                         "is not a buffer of pool 'test'"));
  EXPECT_TRUE(fails_with([&] { pool->free(BufferId{m.value + 12345}); }, ZRT_ERR_INVALID_HANDLE,
                         "is not a buffer of pool"));
  EXPECT_TRUE(fails_with([&] { pool->unlock(m); }, ZRT_ERR_INVALID_STATE, "not locked"));
  pool->lock(m);
  EXPECT_TRUE(fails_with([&] { pool->free(m); }, ZRT_ERR_INVALID_STATE, "unlock it before"));
  pool->unlock(m);

  PoolStats after = pool->stats();
  EXPECT_EQ(after.live, before.live);
  EXPECT_EQ(after.allocations, before.allocations);
  EXPECT_EQ(after.reserved, before.reserved);
  EXPECT_EQ(after.out_of_memory, before.out_of_memory + 2);
  pool->check();
  pool->free(a);
  pool->free(m);
  other->free(foreign);
}

TEST(PoolBadInput, AStaleHandleStaysStaleAfterCompactionReusesItsSlot) {
  auto pool = host_pool(16 * MiB);
  BufferId first = pool->allocate_movable(64 * KiB, Lifetime::Long);
  BufferId second = pool->allocate_movable(64 * KiB, Lifetime::Long);
  fill(pool->pointer(second), 64 * KiB, 2);
  pool->free(first);
  EXPECT_GT(pool->defragment(), 0u);
  BufferId reuse = pool->allocate_movable(64 * KiB, Lifetime::Long);  // takes first's slot
  for (auto call :
       {+[](Pool &p, BufferId b) { p.free(b); }, +[](Pool &p, BufferId b) { p.pointer(b); },
        +[](Pool &p, BufferId b) { p.lock(b); }}) {
    EXPECT_TRUE(fails_with([&] { call(*pool, first); }, ZRT_ERR_INVALID_HANDLE,
                           "stale buffer handle of pool 'test': the buffer was already freed"));
  }
  EXPECT_TRUE(holds(pool->pointer(second), 64 * KiB, 2));
  pool->free(reuse);
  pool->free(second);
  pool->check();
}

TEST(PoolBadInput, BadOptionsAreRefused) {
  EXPECT_TRUE(fails_with([] { host_pool(MiB, MiB, CompactPolicy::Auto, 100); },
                         ZRT_ERR_INVALID_ARGUMENT, "powers of two from 64"));
  EXPECT_TRUE(fails_with([] { host_pool(MiB, MiB, CompactPolicy::Auto, 32); },
                         ZRT_ERR_INVALID_ARGUMENT, "alignment is 32"));
  EXPECT_TRUE(fails_with([] { host_pool(0); }, ZRT_ERR_INVALID_ARGUMENT, "limit is 0"));
  EXPECT_TRUE(
      fails_with([] { host_pool(MiB, 0); }, ZRT_ERR_INVALID_ARGUMENT, "segment_bytes is 0"));
}

TEST(PoolBadInput, OutOfMemoryMessageCarriesTheStats) {
  auto pool = host_pool(4 * MiB, MiB);
  void *a = pool->allocate(2 * MiB + 512 * KiB, Lifetime::Long);
  try {
    pool->allocate(2 * MiB, Lifetime::Transient);
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), ZRT_ERR_OUT_OF_MEMORY);
    std::string m = e.what();
    for (const char *part : {"pool 'test' cannot allocate 2 MiB", "transient", "reserved 3 MiB",
                             "live 2.5 MiB in 1 allocations", "largest free block 512 KiB",
                             "fragmentation 0.00", "compactions 0"})
      EXPECT_NE(m.find(part), std::string::npos) << "'" << m << "' lacks '" << part << "'";
  }
  pool->free(a);
}

TEST(Pool, FreedMemoryIsPoisonedUnderAddressSanitizer) {
  if (!kPoisonsFreedMemory) GTEST_SKIP() << "this build has no AddressSanitizer";
#if defined(__SANITIZE_ADDRESS__)
  auto pool = host_pool(16 * MiB);
  auto *p = static_cast<char *>(pool->allocate(1000, Lifetime::Long));
  EXPECT_FALSE(__asan_address_is_poisoned(p));
  EXPECT_FALSE(__asan_address_is_poisoned(p + 999));
  EXPECT_TRUE(__asan_address_is_poisoned(p + 1000));  // past the bytes asked for
  pool->free(p);
  EXPECT_TRUE(__asan_address_is_poisoned(p));
  BufferId m = pool->allocate_movable(500, Lifetime::Long);
  BufferId n = pool->allocate_movable(500, Lifetime::Long);
  auto *old = static_cast<char *>(pool->pointer(n));
  pool->free(m);
  pool->defragment();
  EXPECT_NE(pool->pointer(n), old);
  EXPECT_TRUE(__asan_address_is_poisoned(old + 256));  // the part of n's old place now free
  EXPECT_FALSE(__asan_address_is_poisoned(static_cast<char *>(pool->pointer(n)) + 499));
  pool->free(n);
#endif
}

TEST(Pool, ThreadsShareAPool) {
  auto pool = host_pool(256 * MiB);
  auto work = [&](int t) {
    std::mt19937_64 rng(static_cast<uint64_t>(t));
    struct Mine {
      void *p;
      size_t n;
      uint64_t seed;
    };
    std::vector<Mine> mine;
    for (int i = 0; i < 5000; ++i) {
      if (mine.size() < 50 && rng() % 3 != 0) {
        size_t n = 1 + rng() % 20000;
        void *p = pool->allocate(n, rng() % 2 ? Lifetime::Long : Lifetime::Transient);
        uint64_t seed = static_cast<uint64_t>(t) * 100000 + static_cast<uint64_t>(i);
        fill(p, std::min<size_t>(n, 64), seed);
        mine.push_back({p, std::min<size_t>(n, 64), seed});
      } else if (!mine.empty()) {
        Mine m = mine.back();
        if (!holds(m.p, m.n, m.seed)) ADD_FAILURE() << "thread " << t << " lost data";
        pool->free(m.p);
        mine.pop_back();
      }
    }
    for (const Mine &m : mine)
      pool->free(m.p);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back(work, t);
  for (auto &th : threads)
    th.join();
  EXPECT_EQ(pool->stats().live, 0u);
  pool->check();
}
