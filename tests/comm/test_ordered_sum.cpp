// The vector kernels of ordered_sum against the scalar loop, bit for bit, on inputs that
// exercise rounding: random bit patterns (NaNs, infinities, subnormals included), every
// dtype, every tail length, several rank counts, averages, and in-place outputs.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "comm/dtype.hpp"
#include "comm/ordered_sum.hpp"
#include "support/vector_state.hpp"

using namespace zrt;

namespace {

const zrt_dtype_t kDtypes[] = {ZRT_DTYPE_FP32, ZRT_DTYPE_FP64, ZRT_DTYPE_BF16, ZRT_DTYPE_FP16};

// Random bytes, with a share of elements set to special values of the dtype.
std::vector<char> random_input(zrt_dtype_t dt, size_t elements, std::mt19937_64 &rng) {
  const size_t es = dtype_size(dt);
  std::vector<char> bytes(elements * es);
  for (char &b : bytes)
    b = static_cast<char>(rng());
  // Mostly ordinary magnitudes, so sums are not all NaN: clear the top exponent bits of
  // three elements in four.
  for (size_t i = 0; i < elements; ++i) {
    char *p = bytes.data() + i * es;
    if (rng() % 4 == 0) continue;
    p[es - 1] = static_cast<char>(p[es - 1] & 0xbf);
  }
  return bytes;
}

void expect_same(zrt_dtype_t dt, int n, size_t length, zrt_op_t op, uint64_t seed) {
  if (length == 0) return;  // nothing to compare (and memcmp wants real pointers)
  std::mt19937_64 rng(seed);
  const size_t es = dtype_size(dt);
  std::vector<std::vector<char>> inputs;
  std::vector<const void *> sources;
  for (int r = 0; r < n; ++r)
    inputs.push_back(random_input(dt, length, rng));
  for (auto &in : inputs)
    sources.push_back(in.data());
  std::vector<char> generic(length * es + 1), vector(length * es + 1);
  detail::ordered_sum_generic(sources.data(), n, length, dt, op, generic.data());
  detail::ordered_sum_avx2(sources.data(), n, length, dt, op, vector.data());
  ASSERT_EQ(std::memcmp(generic.data(), vector.data(), length * es), 0)
      << dtype_name(dt) << " n " << n << " length " << length << " op " << op_name(op);
  // In place into the last source: element i is read from every source before it is
  // written, so the result is the same.
  std::vector<char> last = inputs.back();
  sources.back() = last.data();
  ordered_sum_sources(sources.data(), n, length, dt, op, last.data());
  ASSERT_EQ(std::memcmp(generic.data(), last.data(), length * es), 0)
      << "in place: " << dtype_name(dt) << " n " << n << " length " << length;
  // With streaming stores (fp32's; the other dtypes store as before), out at every element
  // offset from a 32-byte boundary: the element-by-element head, the vectors, the tail.
  sources.back() = inputs.back().data();
  std::vector<char> streamed(length * es + 64);
  for (size_t shift = 0; shift < 8; ++shift) {
    const auto base = reinterpret_cast<uintptr_t>(streamed.data());
    char *out = streamed.data() + (32 - base % 32) % 32 + shift * es % 32;
    detail::ordered_sum_avx2(sources.data(), n, length, dt, op, out, /*stream=*/true);
    ASSERT_EQ(std::memcmp(generic.data(), out, length * es), 0)
        << "streamed: " << dtype_name(dt) << " n " << n << " length " << length << " out " << shift
        << " elements past 32 bytes";
  }
  // Streamed in place into the last source, off a 32-byte boundary.
  const auto base = reinterpret_cast<uintptr_t>(streamed.data());
  char *in_place = streamed.data() + (32 - base % 32) % 32 + 3 * es % 32;
  std::memcpy(in_place, inputs.back().data(), length * es);
  sources.back() = in_place;
  detail::ordered_sum_avx2(sources.data(), n, length, dt, op, in_place, /*stream=*/true);
  ASSERT_EQ(std::memcmp(generic.data(), in_place, length * es), 0)
      << "streamed in place: " << dtype_name(dt) << " n " << n << " length " << length;
}

}  // namespace

TEST(OrderedSum, VectorKernelsEqualTheScalarLoopBitForBit) {
  if (!detail::cpu_has_avx2()) GTEST_SKIP() << "this CPU has no AVX2/F16C";
  uint64_t seed = 1;
  for (zrt_dtype_t dt : kDtypes)
    for (int n : {1, 2, 3, 4, 7, 8})
      for (size_t length : {size_t{0}, size_t{1}, size_t{7}, size_t{15}, size_t{16}, size_t{17},
                            size_t{33}, size_t{1000}, size_t{4099}})
        for (zrt_op_t op : {ZRT_OP_SUM, ZRT_OP_AVG})
          expect_same(dt, n, length, op, seed++);
}

TEST(OrderedSum, AddsInRankOrderInFp32AndRoundsOnce) {
  // 1 + 3 x 2^-9 in bf16 (8 significant bits, so 2^-7 apart at 1): pairwise rounding
  // loses every small term (1 + 2^-9 rounds back to 1); one rounding of the fp32 sum
  // 1 + 0.75 x 2^-7 gives the nearest bf16, 1 + 2^-7.
  const uint16_t one = float_to_bf16(1.0f), small = float_to_bf16(0x1p-9f);
  const uint16_t in[4] = {one, small, small, small};
  const void *sources[4] = {&in[0], &in[1], &in[2], &in[3]};
  uint16_t out = 0;
  ordered_sum_sources(sources, 4, 1, ZRT_DTYPE_BF16, ZRT_OP_SUM, &out);
  EXPECT_EQ(bf16_to_float(out), 1.0f + 0x1p-7f);
  // Rank order matters in fp32: (2^24 + 1) + 1 = 2^24 twice rounded, 1 + 1 + 2^24 exact.
  const float big[3] = {0x1p24f, 1.0f, 1.0f}, little[3] = {1.0f, 1.0f, 0x1p24f};
  float a = 0, b = 0;
  ordered_sum(big, 1, 3, 1, ZRT_DTYPE_FP32, ZRT_OP_SUM, &a);
  ordered_sum(little, 1, 3, 1, ZRT_DTYPE_FP32, ZRT_OP_SUM, &b);
  EXPECT_EQ(a, 0x1p24f);
  EXPECT_EQ(b, 0x1p24f + 2.0f);
}

// The sums run inside every shm, ucx and hier reduction; SSE code after them (the rest of
// the program) runs several times slower while the upper vector halves stay dirty.
TEST(OrderedSum, LeavesTheUpperVectorStateClean) {
  if (!testutil::upper_vector_state_dirty()) GTEST_SKIP() << "this CPU does not report XINUSE";
  const size_t length = 1000;
  std::vector<double> a(length, 1.0), b(length, 2.0), out(length);
  const void *sources[2] = {a.data(), b.data()};
  for (zrt_dtype_t dt : {ZRT_DTYPE_FP32, ZRT_DTYPE_BF16, ZRT_DTYPE_FP16, ZRT_DTYPE_FP64}) {
    SCOPED_TRACE(dtype_name(dt));
    ordered_sum_sources(sources, 2, length, dt, ZRT_OP_SUM, out.data());
    EXPECT_FALSE(*testutil::upper_vector_state_dirty());
    ordered_sum_sources(sources, 2, length, dt, ZRT_OP_SUM, out.data(), /*stream=*/true);
    EXPECT_FALSE(*testutil::upper_vector_state_dirty()) << "streamed";
  }
}
