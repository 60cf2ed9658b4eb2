// Element types: sizes, names, and the conversions between fp32 and the 16-bit formats.
// Half-precision values are reduced by converting to fp32, adding, and rounding back
// (round to nearest even), so every pairwise sum is as exact as fp32 allows.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "zerort/defs.h"

namespace zrt {

// Bytes per element; throws Error(ZRT_ERR_INVALID_ARGUMENT) naming the accepted values.
size_t dtype_size(zrt_dtype_t dtype);
const char *dtype_name(zrt_dtype_t dtype);  // "fp32", or "dtype(7)" when unknown
const char *op_name(zrt_op_t op);
void check_op(zrt_op_t op);  // throws for values outside zrt_op_t

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

inline float fp16_to_float(uint16_t h) {
  return static_cast<float>(std::bit_cast<_Float16>(h));
}
inline uint16_t float_to_fp16(float f) {
  return std::bit_cast<uint16_t>(static_cast<_Float16>(f));
}

// Divides count elements of buf by divisor in place (the "average" of ZRT_OP_AVG);
// 16-bit types are divided in fp32 and rounded once.
void divide_buffer(void *buf, size_t count, zrt_dtype_t dtype, int divisor);

}  // namespace zrt
