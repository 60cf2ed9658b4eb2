// Reading and adding values of any compute dtype in test buffers, written independently of
// zerort's own conversions.
#pragma once

#include <bit>
#include <cstdint>

#include <zerort/zerort.h>

namespace test {

inline float load(const void *p, size_t i, zrt_dtype_t dt) {
  if (dt == ZRT_DTYPE_FP32) return static_cast<const float *>(p)[i];
  uint16_t h = static_cast<const uint16_t *>(p)[i];
  if (dt == ZRT_DTYPE_BF16) return std::bit_cast<float>(uint32_t{h} << 16);
  return static_cast<float>(std::bit_cast<_Float16>(h));
}

// p[i] += v, rounded to nearest even in the 16-bit types.
inline void add(void *p, size_t i, zrt_dtype_t dt, float v) {
  float sum = load(p, i, dt) + v;
  if (dt == ZRT_DTYPE_FP32) {
    static_cast<float *>(p)[i] = sum;
  } else if (dt == ZRT_DTYPE_BF16) {
    uint32_t u = std::bit_cast<uint32_t>(sum);
    u += 0x7fffu + ((u >> 16) & 1u);
    static_cast<uint16_t *>(p)[i] = static_cast<uint16_t>(u >> 16);
  } else {
    static_cast<uint16_t *>(p)[i] = std::bit_cast<uint16_t>(static_cast<_Float16>(sum));
  }
}

}  // namespace test
