#include <gtest/gtest.h>

#include "optim/layout.hpp"

using namespace zrt;

namespace {
std::vector<ParamInfo> params(std::initializer_list<size_t> sizes) {
  std::vector<ParamInfo> out;
  int i = 0;
  for (size_t n : sizes) {
    ParamInfo p;
    p.name = "p" + std::to_string(i++);
    p.numel = n;
    p.shape = {static_cast<int64_t>(n)};
    out.push_back(p);
  }
  return out;
}
}  // namespace

TEST(Layout, BucketsAreFormedFromTheLastParameterAndPadded) {
  // Bucket target 100 elements: [90] [30 40] [10 50] from the end: p4+p3 = 60 (+p2 40 = 100)
  Layout l(params({90, 30, 40, 10, 50}), 100, 3);
  ASSERT_EQ(l.buckets().size(), 3u);
  const auto &b0 = l.buckets()[0];  // reduced first: the last parameters
  EXPECT_EQ(b0.first_param, 2);
  EXPECT_EQ(b0.last_param, 4);
  const auto &b2 = l.buckets()[2];
  EXPECT_EQ(b2.first_param, 0);
  EXPECT_EQ(b2.last_param, 0);
  for (const auto &b : l.buckets()) {
    EXPECT_EQ(b.length % (Layout::kAlign * 3), 0u);
    EXPECT_EQ(b.slice * 3, b.length);
  }
  EXPECT_EQ(l.unpadded(), 220u);
  EXPECT_EQ(l.total() % 3, 0u);
  EXPECT_EQ(l.shard() * 3, l.total());
}

TEST(Layout, ParametersKeepRegistrationOrderAndDoNotOverlap) {
  Layout l(params({5, 1, 1, 700, 3, 64}), 64, 4);
  size_t last_end = 0;
  for (const auto &p : l.params()) {
    EXPECT_GE(p.offset, last_end);
    last_end = p.offset + p.numel;
    const auto &b = l.buckets()[static_cast<size_t>(p.bucket)];
    EXPECT_GE(p.offset, b.offset);
    EXPECT_LE(p.offset + p.numel, b.offset + b.length);
  }
  EXPECT_LE(last_end, l.total());
  // A parameter larger than the bucket size gets a bucket of its own.
  const auto &big = l.params()[3];
  const auto &bb = l.buckets()[static_cast<size_t>(big.bucket)];
  EXPECT_EQ(bb.first_param, 3);
  EXPECT_EQ(bb.last_param, 3);
  EXPECT_GE(l.max_bucket(), 700u);
}

TEST(Layout, ShardOffsetsConcatenateSlicesInFlatOrder) {
  Layout l(params({100, 100, 100, 100}), 150, 2);
  size_t expected = 0;
  for (size_t g = l.buckets().size(); g-- > 0;) {
    const auto &b = l.buckets()[g];
    EXPECT_EQ(b.shard_offset, expected);
    expected += b.slice;
  }
  EXPECT_EQ(expected, l.shard());
  // Slices of one bucket tile it.
  const auto &b = l.buckets()[0];
  EXPECT_EQ(l.slice_begin(b, 1), b.offset + b.slice);
}

TEST(Layout, OneElementAndManyTinyTensors) {
  std::vector<ParamInfo> many;
  for (int i = 0; i < 3000; ++i) {
    ParamInfo p;
    p.name = "t" + std::to_string(i);
    p.numel = static_cast<size_t>(1 + i % 3);
    many.push_back(p);
  }
  Layout l(many, 1000, 4);
  EXPECT_EQ(l.unpadded(), 6000u);  // 1000 x (1 + 2 + 3)
  EXPECT_GT(l.buckets().size(), 1u);
  for (const auto &p : l.params())
    EXPECT_GE(p.bucket, 0);
  Layout one(params({1}), 1, 4);
  EXPECT_EQ(one.total(), Layout::kAlign * 4);
}
