// Activation offload on the host copy engine: bit-exact round trips over many sizes,
// fetches in and out of order, prefetch depth, ring wrap-around, accounting, bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "memory/offload.hpp"
#include "memory/pinned_host_resource.hpp"
#include "memory/thread_copy_engine.hpp"
#include "pool_test_util.hpp"
#include "sizes.hpp"

using namespace zrt;
using pooltest::fails_with;

namespace {

struct Rig {
  std::unique_ptr<Pool> pinned, staging;
  std::unique_ptr<Offload> offload;

  explicit Rig(size_t ring_bytes, int depth = 2) {
    PoolOptions p;
    p.name = "pinned";
    p.limit = 64 * MiB;
    pinned = std::make_unique<Pool>(std::make_unique<PinnedHostResource>(PinnedHostOptions{}), p);
    staging = pooltest::host_pool(256 * MiB);
    OffloadOptions o;
    o.ring_bytes = ring_bytes;
    o.prefetch_depth = depth;
    o.ring_key = "offload.ring_bytes";
    offload = std::make_unique<Offload>(
        *pinned, [this](MemorySpace) -> Pool & { return *staging; },
        std::make_unique<ThreadCopyEngine>(), o);
  }
};

std::vector<unsigned char> tensor(size_t n, uint32_t seed) {
  std::vector<unsigned char> v(n);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t word = rng();
    std::memcpy(v.data() + i, &word, std::min<size_t>(8, n - i));
  }
  return v;
}

}  // namespace

TEST(Offload, RoundTripsAreBitExactInBackwardOrder) {
  Rig rig(16 * MiB);
  std::vector<size_t> sizes = {1, 7, 255, 256, 257, 4095, 65536, 100003, MiB + 1, 3 * MiB};
  std::vector<std::vector<unsigned char>> src;
  std::vector<uint64_t> tokens;
  for (size_t i = 0; i < sizes.size(); ++i) {
    src.push_back(tensor(sizes[i], static_cast<uint32_t>(i)));
    tokens.push_back(rig.offload->push(src.back().data(), sizes[i]));
  }
  // Backward: newest first, prefetching the one after the one being fetched.
  for (size_t k = sizes.size(); k-- > 0;) {
    if (k > 0) rig.offload->prefetch(tokens[k - 1]);
    std::vector<unsigned char> back(sizes[k], 0xee);
    rig.offload->fetch(tokens[k], back.data());
    EXPECT_EQ(back, src[k]) << "size " << sizes[k];
  }
  OffloadStats s = rig.offload->stats();
  EXPECT_EQ(s.pushes, sizes.size());
  EXPECT_EQ(s.fetches, sizes.size());
  EXPECT_EQ(s.tokens, 0u);
  EXPECT_EQ(s.offloaded, 0u);
  EXPECT_EQ(s.peak_offloaded, std::accumulate(sizes.begin(), sizes.end(), size_t{0}));
  EXPECT_EQ(s.ring_used, 0u);
  EXPECT_GT(s.prefetches, 0u);
  EXPECT_EQ(s.device_saved, 0u);  // host sources: no device memory saved
  EXPECT_STREQ(s.engine, "thread");
  EXPECT_GT(s.copy_seconds, 0.0);            // (exposed time may exceed it: it includes waiting)
  EXPECT_EQ(rig.staging->stats().live, 0u);  // staging buffers went back
}

TEST(Offload, OutOfOrderFetchesAndRingWrapAround) {
  Rig rig(2 * MiB, 3);
  std::mt19937 rng(11);
  struct Held {
    uint64_t token;
    std::vector<unsigned char> data;
  };
  std::vector<Held> held;
  size_t pushed = 0, refused = 0;
  for (int op = 0; op < 600; ++op) {
    if (held.empty() || rng() % 5 < 3) {
      size_t n = 1 + rng() % (700 * KiB);
      Held h{0, tensor(n, static_cast<uint32_t>(op))};
      try {
        h.token = rig.offload->push(h.data.data(), n);
      } catch (const Error &e) {
        ASSERT_EQ(e.status(), ZRT_ERR_OUT_OF_MEMORY);
        ++refused;
        // Full: fetch the oldest, which lets the head wrap past the end.
        std::vector<unsigned char> back(held.front().data.size());
        rig.offload->fetch(held.front().token, back.data());
        ASSERT_EQ(back, held.front().data);
        held.erase(held.begin());
        continue;
      }
      if (rng() % 3 == 0) rig.offload->wait(h.token);
      held.push_back(std::move(h));
      ++pushed;
    } else {
      size_t i = rng() % held.size();
      if (rng() % 2 == 0) rig.offload->prefetch(held[rng() % held.size()].token);
      if (rng() % 10 == 0) {
        rig.offload->discard(held[i].token);
      } else {
        std::vector<unsigned char> back(held[i].data.size());
        rig.offload->fetch(held[i].token, back.data());
        ASSERT_EQ(back, held[i].data) << "op " << op;
      }
      held.erase(held.begin() + static_cast<long>(i));
    }
  }
  for (Held &h : held) {
    std::vector<unsigned char> back(h.data.size());
    rig.offload->fetch(h.token, back.data());
    ASSERT_EQ(back, h.data);
  }
  // 600 operations of up to 700 KiB through a 2 MiB ring: it wrapped many times.
  EXPECT_GT(pushed, 100u);
  EXPECT_GT(refused, 0u);
  EXPECT_EQ(rig.offload->stats().tokens, 0u);
  EXPECT_EQ(rig.staging->stats().live, 0u);
}

TEST(Offload, PrefetchesBeyondTheDepthWaitForAFetch) {
  Rig rig(8 * MiB, 2);
  std::vector<std::vector<unsigned char>> src;
  std::vector<uint64_t> tokens;
  for (int i = 0; i < 4; ++i) {
    src.push_back(tensor(MiB, static_cast<uint32_t>(i)));
    tokens.push_back(rig.offload->push(src.back().data(), MiB));
  }
  for (int i = 3; i >= 0; --i)
    rig.offload->prefetch(tokens[static_cast<size_t>(i)]);
  rig.offload->prefetch(tokens[3]);  // a second prefetch of a token does nothing
  EXPECT_EQ(rig.offload->stats().prefetches, 2u);
  EXPECT_EQ(rig.staging->stats().allocations, 2u);
  std::vector<unsigned char> back(MiB);
  rig.offload->fetch(tokens[3], back.data());
  EXPECT_EQ(back, src[3]);
  EXPECT_EQ(rig.offload->stats().prefetches, 3u);  // the queued one started
  for (int i = 2; i >= 0; --i) {
    rig.offload->fetch(tokens[static_cast<size_t>(i)], back.data());
    EXPECT_EQ(back, src[static_cast<size_t>(i)]);
  }
  EXPECT_EQ(rig.offload->stats().prefetches, 4u);
}

TEST(Offload, PrefetchIntoTheDestinationNeedsNoStaging) {
  Rig rig(16 * MiB);
  std::vector<std::vector<unsigned char>> src;
  std::vector<uint64_t> tokens;
  for (int i = 0; i < 4; ++i) {
    src.push_back(tensor(MiB + 17 * static_cast<size_t>(i), static_cast<uint32_t>(40 + i)));
    tokens.push_back(rig.offload->push(src.back().data(), src.back().size()));
  }
  std::vector<std::vector<unsigned char>> dst(4);
  for (int i = 3; i >= 0; --i) {
    auto k = static_cast<size_t>(i);
    dst[k].assign(src[k].size(), 0);
    rig.offload->prefetch_into(tokens[k], dst[k].data());
  }
  EXPECT_EQ(rig.staging->stats().allocations, 0u);  // no staging buffer was taken
  for (int i = 3; i >= 1; --i) {
    auto k = static_cast<size_t>(i);
    rig.offload->fetch(tokens[k], dst[k].data());
    EXPECT_EQ(dst[k], src[k]);
  }
  // Fetching into another buffer than the prefetch's still delivers the bytes.
  std::vector<unsigned char> elsewhere(src[0].size());
  rig.offload->fetch(tokens[0], elsewhere.data());
  EXPECT_EQ(elsewhere, src[0]);
  EXPECT_EQ(dst[0], src[0]);  // and the prefetch into dst[0] completed before the fetch
  EXPECT_EQ(rig.offload->stats().prefetches, 4u);
  EXPECT_TRUE(fails_with([&] { rig.offload->prefetch_into(tokens[0], dst[0].data()); },
                         ZRT_ERR_INVALID_HANDLE, "stale offload token"));
}

TEST(Offload, WaitMakesTheSourceReusable) {
  Rig rig(64 * MiB);
  std::vector<unsigned char> big = tensor(32 * MiB, 3), copy = big;
  uint64_t t = rig.offload->push(big.data(), big.size());
  rig.offload->wait(t);
  EXPECT_TRUE(rig.offload->test(t));
  std::fill(big.begin(), big.end(), 0);  // the source may be reused now
  std::vector<unsigned char> back(big.size());
  rig.offload->fetch(t, back.data());
  EXPECT_EQ(back, copy);
}

TEST(Offload, BadTokensAndFullRingsAreClearErrors) {
  Rig rig(MiB);
  Rig other(MiB);
  std::vector<unsigned char> a = tensor(600 * KiB, 1), out(600 * KiB);
  uint64_t t = rig.offload->push(a.data(), a.size());
  uint64_t foreign = other.offload->push(a.data(), 10);
  EXPECT_TRUE(fails_with([&] { rig.offload->push(a.data(), 600 * KiB); }, ZRT_ERR_OUT_OF_MEMORY,
                         "the offload ring has no room for 600 KiB: 600 KiB of 1 MiB "
                         "(offload.ring_bytes) are held by 1 token(s)"));
  EXPECT_TRUE(fails_with([&] { rig.offload->push(a.data(), 2 * MiB); }, ZRT_ERR_OUT_OF_MEMORY,
                         "does not fit in the offload ring of 1 MiB"));
  EXPECT_TRUE(
      fails_with([&] { rig.offload->push(nullptr, 10); }, ZRT_ERR_INVALID_ARGUMENT, "src is NULL"));
  EXPECT_TRUE(
      fails_with([&] { rig.offload->push(a.data(), 0); }, ZRT_ERR_INVALID_ARGUMENT, "bytes is 0"));
  EXPECT_TRUE(fails_with([&] { rig.offload->fetch(0, out.data()); }, ZRT_ERR_INVALID_HANDLE,
                         "NULL offload token"));
  EXPECT_TRUE(fails_with([&] { rig.offload->fetch(foreign, out.data()); }, ZRT_ERR_INVALID_HANDLE,
                         "not a token of this offload engine"));
  EXPECT_TRUE(
      fails_with([&] { rig.offload->fetch(t, nullptr); }, ZRT_ERR_INVALID_ARGUMENT, "dst is NULL"));
  rig.offload->fetch(t, out.data());
  EXPECT_EQ(out, a);
  for (auto call :
       {+[](Offload &o, uint64_t k) { o.prefetch(k); },
        +[](Offload &o, uint64_t k) { o.discard(k); }, +[](Offload &o, uint64_t k) { o.wait(k); }})
    EXPECT_TRUE(fails_with([&] { call(*rig.offload, t); }, ZRT_ERR_INVALID_HANDLE,
                           "stale offload token: it was already fetched or discarded"));
  // The engine still works after all of that.
  uint64_t again = rig.offload->push(a.data(), a.size());
  rig.offload->fetch(again, out.data());
  EXPECT_EQ(out, a);
  other.offload->discard(foreign);
}

TEST(Offload, ATokenOfAReusedSlotIsStaleAndOneNeverGivenOutIsForeign) {
  Rig rig(MiB);
  std::vector<unsigned char> a = tensor(KiB, 1), out(KiB);
  uint64_t old = rig.offload->push(a.data(), a.size());
  rig.offload->fetch(old, out.data());
  uint64_t now = rig.offload->push(a.data(), a.size());
  // The same slot (low 32 bits), its next generation (the 20 bits above), the same tag.
  EXPECT_EQ(now & 0xffffffffu, old & 0xffffffffu);
  EXPECT_EQ((now >> 32) & 0xfffff, ((old >> 32) & 0xfffff) + 1);
  EXPECT_EQ(now >> 52, old >> 52);
  EXPECT_TRUE(fails_with([&] { rig.offload->fetch(old, out.data()); }, ZRT_ERR_INVALID_HANDLE,
                         "stale offload token: it was already fetched or discarded"));
  const std::string foreign = "not a token of this offload engine";
  uint64_t ahead = now + (uint64_t{1} << 32);  // a generation the slot has not reached
  uint64_t no_generation = now & ~(uint64_t{0xfffff} << 32);
  uint64_t past_the_slots = now + 1;
  for (uint64_t forged : {ahead, no_generation, past_the_slots})
    EXPECT_TRUE(fails_with([&] { rig.offload->wait(forged); }, ZRT_ERR_INVALID_HANDLE, foreign))
        << std::hex << forged;
  rig.offload->fetch(now, out.data());
  EXPECT_EQ(out, a);
}

TEST(Offload, RingThatDoesNotFitInPinnedMemoryIsRefused) {
  PoolOptions p;
  p.name = "pinned";
  p.limit = 4 * MiB;
  Pool pinned(std::make_unique<PinnedHostResource>(PinnedHostOptions{}), p);
  auto host = pooltest::host_pool(16 * MiB);
  OffloadOptions o;
  o.ring_bytes = 8 * MiB;
  o.ring_key = "offload.ring_bytes";
  EXPECT_TRUE(fails_with(
      [&] {
        Offload off(
            pinned, [&](MemorySpace) -> Pool & { return *host; },
            std::make_unique<ThreadCopyEngine>(), o);
      },
      ZRT_ERR_OUT_OF_MEMORY,
      "pinned memory for the offload ring of 8 MiB (offload.ring_bytes) is not available"));
  EXPECT_EQ(pinned.stats().live, 0u);
  EXPECT_TRUE(fails_with(
      [&] {
        Offload off(
            *host, [&](MemorySpace) -> Pool & { return *host; },
            std::make_unique<ThreadCopyEngine>(), OffloadOptions{});
      },
      ZRT_ERR_INVALID_ARGUMENT, "offload needs a ZRT_MEMORY_PINNED_HOST pool"));
}
