// DeepSpeed's three batch sizes: two make the third, three must multiply out, and the
// messages name the keys, their values, where they came from and the ranks.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "optim/batch_size.hpp"
#include "runtime/error.hpp"

using namespace zrt;

namespace {

BatchValue batch_given(int64_t v, const char *origin = "ds.json") {
  return {v, origin};
}
BatchValue batch_none() {
  return {std::nullopt, "the built-in default"};
}

std::string batch_error(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), ZRT_ERR_CONFIG);
    return e.what();
  }
  return "";
}

}  // namespace

TEST(BatchSize, TwoSizesMakeTheThirdAsInDeepSpeed) {
  BatchSizes b = resolve_batch_sizes(batch_given(32), batch_given(4), batch_none(), 2);
  EXPECT_EQ(b.accumulation, 4);
  EXPECT_EQ(b.micro_batch, 4);
  b = resolve_batch_sizes(batch_given(32), batch_none(), batch_given(2), 4);
  EXPECT_EQ(b.micro_batch, 4);
  b = resolve_batch_sizes(batch_none(), batch_given(3), batch_given(5), 2);
  EXPECT_EQ(b.train_batch, 30);
  // One size alone: one micro-step.
  b = resolve_batch_sizes(batch_given(12), batch_none(), batch_none(), 3);
  EXPECT_EQ(b.micro_batch, 4);
  EXPECT_EQ(b.accumulation, 1);
  b = resolve_batch_sizes(batch_none(), batch_given(6), batch_none(), 2);
  EXPECT_EQ(b.train_batch, 12);
  EXPECT_EQ(b.accumulation, 1);
  // None: the accumulation alone, no sizes.
  b = resolve_batch_sizes(batch_none(), batch_none(), batch_given(3), 2);
  EXPECT_EQ(b.accumulation, 3);
  EXPECT_EQ(b.train_batch, 0);
  EXPECT_EQ(b.micro_batch, 0);
  b = resolve_batch_sizes(batch_given(24), batch_given(3), batch_given(2), 4);
  EXPECT_EQ(b.accumulation, 2);
}

TEST(BatchSize, SizesThatDoNotMultiplyOutNameTheKeysValuesAndRanks) {
  std::string m = batch_error(
      [] { resolve_batch_sizes(batch_given(32), batch_given(4), batch_given(2, "--x"), 2); });
  EXPECT_NE(m.find("train_batch_size 32 (from ds.json)"), std::string::npos) << m;
  EXPECT_NE(m.find("train_micro_batch_size_per_gpu 4 (from ds.json)"), std::string::npos) << m;
  EXPECT_NE(m.find("gradient_accumulation_steps 2 (from --x)"), std::string::npos) << m;
  EXPECT_NE(m.find("2 rank(s) = 16"), std::string::npos) << m;
  m = batch_error([] { resolve_batch_sizes(batch_given(30), batch_given(4), batch_none(), 2); });
  EXPECT_NE(m.find("multiple of 8"), std::string::npos) << m;
  m = batch_error([] { resolve_batch_sizes(batch_given(30), batch_none(), batch_given(4), 2); });
  EXPECT_NE(m.find("multiple of 8"), std::string::npos) << m;
  m = batch_error([] { resolve_batch_sizes(batch_given(10), batch_none(), batch_none(), 4); });
  EXPECT_NE(m.find("does not split over 4 rank(s)"), std::string::npos) << m;
}
