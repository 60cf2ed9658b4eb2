#include <gtest/gtest.h>

#include "comm/partition.hpp"

using namespace zrt;

TEST(Partition, ShardsCoverTheBufferExactlyOnce) {
  for (size_t count : {0ul, 1ul, 2ul, 3ul, 7ul, 10ul, 1000ul, 4099ul}) {
    for (int n : {1, 2, 3, 4, 7, 16}) {
      size_t covered = 0, expected_offset = 0;
      for (int r = 0; r < n; ++r) {
        Shard s = shard_range(count, n, r);
        EXPECT_EQ(s.shard, (count + n - 1) / static_cast<size_t>(n));
        EXPECT_LE(s.length, s.shard);
        if (s.length > 0) {
          EXPECT_EQ(s.offset, expected_offset);
          expected_offset += s.length;
        }
        covered += s.length;
      }
      EXPECT_EQ(covered, count) << count << " over " << n;
    }
  }
}

TEST(Partition, DocumentedExample) {
  // 10 elements over 4 ranks: shards of 3, the last rank owns one element.
  EXPECT_EQ(shard_range(10, 4, 0).length, 3u);
  EXPECT_EQ(shard_range(10, 4, 3).offset, 9u);
  EXPECT_EQ(shard_range(10, 4, 3).length, 1u);
  // 5 elements over 4 ranks: shards of 2, rank 3 owns nothing.
  EXPECT_EQ(shard_range(5, 4, 3).length, 0u);
  EXPECT_EQ(shard_range(5, 4, 2).length, 1u);
}
