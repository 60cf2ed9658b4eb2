// How a collective is written in messages: the watchdog's names its size with the one
// byte formatter of the tree (runtime/format_bytes.hpp).
#include <gtest/gtest.h>

#include "comm/coll_args.hpp"

using namespace zrt;

namespace {

CollArgs args(CollKind kind, size_t count, zrt_dtype_t dtype) {
  CollArgs a;
  a.kind = kind;
  a.count = count;
  a.dtype = dtype;
  a.seq = 5;
  return a;
}

}  // namespace

TEST(CollArgs, DescribeNamesTheCollectiveItsSequenceNumberAndItsArguments) {
  EXPECT_EQ(args(CollKind::AllReduce, 4096, ZRT_DTYPE_FP32).describe(),
            "all_reduce #5 (4096 x fp32, sum)");
  EXPECT_EQ(args(CollKind::AllGather, 3, ZRT_DTYPE_BF16).describe(), "all_gather #5 (3 x bf16)");
  CollArgs b = args(CollKind::Broadcast, 7, ZRT_DTYPE_FP64);
  b.root = 2;
  EXPECT_EQ(b.describe(), "broadcast #5 (7 x fp64, root 2)");
}

TEST(CollArgs, DescribeWithBytesWritesSizesAsFormatBytesDoes) {
  EXPECT_EQ(args(CollKind::AllReduce, 1000, ZRT_DTYPE_FP32).describe_with_bytes(),
            "all_reduce #5 (1000 x fp32 = 3.91 KiB, sum)");
  EXPECT_EQ(args(CollKind::ReduceScatter, 17, ZRT_DTYPE_FP16).describe_with_bytes(),
            "reduce_scatter #5 (17 x fp16 = 34 B, sum)");
  // Three significant digits, never an exponent.
  EXPECT_EQ(args(CollKind::AllGather, 255 * 1024, ZRT_DTYPE_FP32).describe_with_bytes(),
            "all_gather #5 (261120 x fp32 = 1020 KiB)");
}

TEST(CollArgs, DescribeWithBytesOfAnUnknownDtypeStillNamesIt) {
  const std::string text =
      args(CollKind::AllReduce, 10, static_cast<zrt_dtype_t>(42)).describe_with_bytes();
  EXPECT_NE(text.find("10 x unknown dtype = 0 B"), std::string::npos) << text;
}
