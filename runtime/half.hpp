// Conversions between fp32 and the 16-bit formats bf16 and IEEE fp16, rounding to nearest
// even. Header-only and free of the rest of zerort, so apps and tests may share it.
//
// fp16 uses the compiler's _Float16 where it has one (GCC 12+, Clang 15+ on x86-64: one
// F16C instruction); elsewhere (Clang 14, whose x86 target lacks _Float16) a branch-free
// software conversion gives the same bits: it lets the fp32 adder do the rounding, the
// technique of Maratyszcza's FP16 library.
#pragma once

#include <bit>
#include <cstdint>

namespace zrt {

inline float bf16_to_float(uint16_t h) {
  return std::bit_cast<float>(uint32_t{h} << 16);
}

inline uint16_t float_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                      // round to nearest, ties to even
  return static_cast<uint16_t>(u >> 16);
}

inline float fp16_to_float_soft(uint16_t h) {
  const uint32_t w = uint32_t{h} << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;  // exponent and mantissa, sign shifted out
  // Normal (and inf/NaN): rebias the exponent by 224 then scale by 2^-112, so that the
  // fp16 maximum exponent lands on fp32's inf/NaN exponent.
  const float normal = std::bit_cast<float>((two_w >> 4) + (0xe0u << 23)) * 0x1.0p-112f;
  // Subnormal: the mantissa as the low bits of 0.5's mantissa, minus 0.5.
  const float subnormal = std::bit_cast<float>((two_w >> 17) | (126u << 23)) - 0.5f;
  const uint32_t bits =
      two_w < (1u << 27) ? std::bit_cast<uint32_t>(subnormal) : std::bit_cast<uint32_t>(normal);
  return std::bit_cast<float>(sign | bits);
}

inline uint16_t float_to_fp16_soft(float f) {
  const uint32_t w = std::bit_cast<uint32_t>(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  // Scaling up then down overflows what is too large for fp16 to inf and leaves the rest.
  const float a = std::bit_cast<float>(shl1_w >> 1);  // |f|
  float base = (a * 0x1.0p+112f) * 0x1.0p-110f;
  // Adding 2^(e+13) (at least 2^-1, for subnormals) rounds the mantissa to fp16's 10 bits.
  uint32_t bias = shl1_w & 0xff000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = std::bit_cast<uint32_t>(base);
  const uint32_t nonsign = ((bits >> 13) & 0x7c00u) + (bits & 0x0fffu);
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xff000000u ? 0x7e00u : nonsign));
}

#if defined(__FLT16_MANT_DIG__)
inline float fp16_to_float(uint16_t h) {
  return static_cast<float>(std::bit_cast<_Float16>(h));
}
inline uint16_t float_to_fp16(float f) {
  return std::bit_cast<uint16_t>(static_cast<_Float16>(f));
}
#else
inline float fp16_to_float(uint16_t h) {
  return fp16_to_float_soft(h);
}
inline uint16_t float_to_fp16(float f) {
  return float_to_fp16_soft(f);
}
#endif

}  // namespace zrt
