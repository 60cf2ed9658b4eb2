#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "comm/dtype.hpp"
#include "runtime/error.hpp"

using namespace zrt;

TEST(Dtype, Sizes) {
  EXPECT_EQ(dtype_size(ZRT_DTYPE_FP32), 4u);
  EXPECT_EQ(dtype_size(ZRT_DTYPE_FP64), 8u);
  EXPECT_EQ(dtype_size(ZRT_DTYPE_BF16), 2u);
  EXPECT_EQ(dtype_size(ZRT_DTYPE_FP16), 2u);
  try {
    dtype_size(static_cast<zrt_dtype_t>(42));
    FAIL() << "no error for dtype 42";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), ZRT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("ZRT_DTYPE_BF16"), std::string::npos);
  }
}

TEST(Dtype, Bf16KnownValuesAndRounding) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to even (1.0).
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties go to even (1 + 2^-6).
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isinf(bf16_to_float(float_to_bf16(std::numeric_limits<float>::infinity()))));
}

TEST(Dtype, Bf16RoundTripIsExactAndRoundingIsNearest) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = bf16_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bf16(f), h) << std::hex << h;
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1e4f, 1e4f);
  for (int i = 0; i < 100000; ++i) {
    float f = dist(rng);
    float r = bf16_to_float(float_to_bf16(f));
    EXPECT_LE(std::fabs(r - f), std::fabs(f) * std::ldexp(1.0f, -8)) << f;
  }
}

TEST(Dtype, Fp16RoundTripAndKnownValues) {
  EXPECT_EQ(float_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(fp16_to_float(0x3555), 0.333251953125f);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = fp16_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_fp16(f), h) << std::hex << h;
  }
}

TEST(Dtype, DivideBufferAveragesInFp32ForHalfTypes) {
  uint16_t b[3] = {float_to_bf16(3.0f), float_to_bf16(-1.0f), float_to_bf16(1.0f)};
  divide_buffer(b, 3, ZRT_DTYPE_BF16, 3);
  EXPECT_EQ(b[0], float_to_bf16(1.0f));
  EXPECT_EQ(b[1], float_to_bf16(-1.0f / 3.0f));
  float f[2] = {1.0f, 2.0f};
  divide_buffer(f, 2, ZRT_DTYPE_FP32, 4);
  EXPECT_EQ(f[0], 0.25f);
  EXPECT_EQ(f[1], 0.5f);
}

// The software fp16 conversions (used where the compiler has no _Float16) agree bit for
// bit with known values, and with _Float16 itself on every half and on a sweep of floats.
TEST(Dtype, Fp16SoftwareConversionIsExact) {
  EXPECT_EQ(float_to_fp16_soft(1.0f), 0x3c00);
  EXPECT_EQ(float_to_fp16_soft(-2.0f), 0xc000);
  EXPECT_EQ(float_to_fp16_soft(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_fp16_soft(65520.0f), 0x7c00);  // rounds up to inf
  EXPECT_EQ(float_to_fp16_soft(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_fp16_soft(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(float_to_fp16_soft(std::ldexp(1.0f, -25)), 0x0000);         // tie to even: zero
  EXPECT_EQ(float_to_fp16_soft(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(fp16_to_float_soft(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_float_soft(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isnan(fp16_to_float_soft(0x7e00)));
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_float_soft(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_fp16_soft(f), h) << "half 0x" << std::hex << h;
  }
#if defined(__FLT16_MANT_DIG__)
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float hw = static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(h)));
    const float sw = fp16_to_float_soft(static_cast<uint16_t>(h));
    if (std::isnan(hw)) {
      ASSERT_TRUE(std::isnan(sw));
      continue;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(sw), std::bit_cast<uint32_t>(hw)) << std::hex << h;
  }
  // Every float whose exponent fp16 can reach (and beyond, both ways), 2^20 samples.
  std::mt19937 rng(7);
  for (int i = 0; i < (1 << 20); ++i) {
    const uint32_t exponent = 90 + rng() % 60, mantissa = rng() & 0x7fffff, sign = rng() & 1;
    const float f = std::bit_cast<float>(sign << 31 | exponent << 23 | mantissa);
    ASSERT_EQ(float_to_fp16_soft(f), std::bit_cast<uint16_t>(static_cast<_Float16>(f))) << f;
  }
#endif
}
