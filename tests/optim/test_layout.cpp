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
    // Within its buckets' group, which is contiguous.
    const auto &b = l.buckets()[static_cast<size_t>(p.bucket)];
    EXPECT_GE(p.offset, b.group_offset);
    EXPECT_LE(p.offset + p.numel, b.group_offset + b.group_length);
  }
  EXPECT_LE(last_end, l.total());
  // A parameter larger than the bucket size gets buckets of its own, none larger than the
  // bucket size: 700 elements in pieces of 64 (4 ranks x kAlign).
  const auto &big = l.params()[3];
  EXPECT_EQ(big.buckets, 11);
  EXPECT_EQ(l.max_bucket(), 64u);
  EXPECT_EQ(l.max_split_group(), 704u);
  for (int k = big.bucket; k < big.bucket + big.buckets; ++k) {
    const auto &bb = l.bucket(k);
    EXPECT_EQ(bb.first_param, 3);
    EXPECT_EQ(bb.last_param, 3);
    EXPECT_EQ(bb.group, big.bucket);
    EXPECT_EQ(bb.group_buckets, 11);
    EXPECT_EQ(bb.group_offset, big.offset);
    EXPECT_EQ(bb.group_length, 704u);
  }
  // Reduced from its end: the first bucket is its last piece, padded; the others are whole.
  EXPECT_EQ(l.bucket(big.bucket).offset, big.offset + 640);
  EXPECT_EQ(l.bucket(big.bucket + 10).offset, big.offset);
  for (const auto &b : l.buckets())
    if (b.group_buckets == 1) {
      EXPECT_EQ(b.group, b.index);
      EXPECT_EQ(b.group_offset, b.offset);
      EXPECT_EQ(b.group_length, b.length);
    }
}

// Buckets tile the flat buffer in reverse index order, split parameters included, and the
// shard offsets still concatenate the slices.
TEST(Layout, SplitParametersTileTheFlatBuffer) {
  Layout l(params({1000, 10, 2000, 5}), 256, 2);
  size_t at = 0, shard = 0;
  for (size_t g = l.buckets().size(); g-- > 0;) {
    const auto &b = l.buckets()[g];
    EXPECT_EQ(b.offset, at);
    EXPECT_LE(b.length, 256u);
    EXPECT_EQ(b.shard_offset, shard);
    at += b.length;
    shard += b.slice;
  }
  EXPECT_EQ(at, l.total());
  EXPECT_EQ(l.params()[0].buckets, 4);  // 1000 = 3 x 256 + 232
  EXPECT_EQ(l.params()[2].buckets, 8);  // 2000 = 7 x 256 + 208
  EXPECT_EQ(l.params()[1].buckets, 1);
  EXPECT_EQ(l.unpadded(), 3015u);
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
