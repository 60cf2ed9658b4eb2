// The offload ring's space management: push order, release in any order, wrap-around.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "memory/offload_ring.hpp"

using zrt::OffloadRing;

TEST(OffloadRing, BackwardReleasesNewestFirstAndReusesTheSpace) {
  OffloadRing ring(1000 * 256, 256);
  std::vector<size_t> offsets;
  for (int i = 0; i < 4; ++i)
    offsets.push_back(*ring.reserve(100 * 256));
  EXPECT_EQ(offsets, (std::vector<size_t>{0, 25600, 51200, 76800}));
  ring.release(offsets[3]);
  ring.release(offsets[2]);
  EXPECT_EQ(*ring.reserve(10), 51200u);  // the head moved back
  EXPECT_EQ(ring.used(), 2 * 25600u + 256u);
}

TEST(OffloadRing, WrapsAroundWhenTheOldestAreReleased) {
  OffloadRing ring(1024 * 256, 256);
  size_t a = *ring.reserve(400 * 256), b = *ring.reserve(400 * 256);
  EXPECT_FALSE(ring.reserve(400 * 256).has_value());  // 224 units left at the end
  ring.release(a);
  size_t c = *ring.reserve(300 * 256);  // wraps to the start
  EXPECT_EQ(c, 0u);
  EXPECT_FALSE(ring.reserve(200 * 256).has_value());  // only 100 units before b
  size_t d = *ring.reserve(100 * 256);
  EXPECT_EQ(d, 300u * 256);
  ring.release(b);
  ring.release(c);
  ring.release(d);
  EXPECT_EQ(ring.entries(), 0u);
  EXPECT_EQ(*ring.reserve(1024 * 256), 0u);  // empty again: all of it
}

TEST(OffloadRing, MiddleReleasesComeBackOnceTheyReachAnEnd) {
  OffloadRing ring(300 * 256, 256);
  size_t a = *ring.reserve(100 * 256), b = *ring.reserve(100 * 256), c = *ring.reserve(100 * 256);
  ring.release(b);
  EXPECT_FALSE(ring.reserve(256).has_value());  // b's space is not reusable yet
  ring.release(c);                              // c and then b leave from the head
  EXPECT_EQ(*ring.reserve(150 * 256), 100u * 256);
  ring.release(a);
  EXPECT_EQ(ring.used(), 150u * 256);
  EXPECT_THROW(ring.release(a), std::exception);
}

TEST(OffloadRing, RandomPushAndReleaseNeverOverlap) {
  OffloadRing ring(1 << 20, 256);
  std::mt19937 rng(5);
  std::vector<std::pair<size_t, size_t>> live;
  for (int op = 0; op < 20000; ++op) {
    if (live.empty() || rng() % 2 == 0) {
      size_t n = 1 + rng() % 100000;
      auto off = ring.reserve(n);
      if (!off) continue;
      size_t size = (n + 255) / 256 * 256;
      ASSERT_LE(*off + size, ring.capacity());
      for (auto [o, s] : live)
        ASSERT_TRUE(*off + size <= o || o + s <= *off) << "overlap at op " << op;
      live.push_back({*off, size});
    } else {
      // Mostly newest first, as backward does, sometimes any.
      size_t i = rng() % 4 == 0 ? rng() % live.size() : live.size() - 1;
      ring.release(live[i].first);
      live.erase(live.begin() + static_cast<long>(i));
    }
  }
}
