// copy_streaming against memcpy: every head alignment of the destination and the source,
// lengths around the 16-byte stores and 64-byte rounds, and a copy of the size the
// all-gather hands it; the bytes around the destination stay as they were.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "comm/streaming_copy.hpp"

using namespace zrt;

namespace {

void expect_copies(size_t bytes, size_t dst_offset, size_t src_offset, std::mt19937_64 &rng) {
  constexpr size_t kGuard = 128;  // more than a line on either side, after any head
  std::vector<unsigned char> src(bytes + src_offset + 64), dst(bytes + dst_offset + 2 * kGuard);
  for (unsigned char &b : src)
    b = static_cast<unsigned char>(rng());
  for (unsigned char &b : dst)
    b = static_cast<unsigned char>(rng());
  std::vector<unsigned char> expected = dst;
  std::memcpy(expected.data() + kGuard + dst_offset, src.data() + src_offset, bytes);
  copy_streaming(dst.data() + kGuard + dst_offset, src.data() + src_offset, bytes);
  ASSERT_EQ(dst, expected) << bytes << " bytes, destination offset " << dst_offset
                           << ", source offset " << src_offset;
}

TEST(StreamingCopy, CopiesWhatMemcpyCopiesAndNothingElse) {
  std::mt19937_64 rng(7);
  for (size_t bytes = 0; bytes <= 200; ++bytes)
    for (size_t dst_offset = 0; dst_offset < 65; ++dst_offset)
      expect_copies(bytes, dst_offset, (bytes + dst_offset) % 5, rng);
  for (size_t src_offset = 0; src_offset < 17; ++src_offset)
    expect_copies(1000, 3, src_offset, rng);
}

TEST(StreamingCopy, CopiesAnAllGatherPiece) {
  std::mt19937_64 rng(11);
  expect_copies((size_t{1} << 20) + 12, 4, 0, rng);  // 1 MiB pieces of fp32, odd offsets
  expect_copies((size_t{1} << 20) - 4, 12, 8, rng);
}

}  // namespace
