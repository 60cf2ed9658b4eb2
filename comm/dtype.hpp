// Element types: sizes, names, and the conversions between fp32 and the 16-bit formats.
// Half-precision values are reduced by converting to fp32, adding, and rounding back
// (round to nearest even), so every pairwise sum is as exact as fp32 allows.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "runtime/half.hpp"
#include "zerort/defs.h"

namespace zrt {

// Bytes per element; throws Error(ZRT_ERR_INVALID_ARGUMENT) naming the accepted values.
size_t dtype_size(zrt_dtype_t dtype);
const char *dtype_name(zrt_dtype_t dtype);  // "fp32", or "dtype(7)" when unknown
const char *op_name(zrt_op_t op);
void check_op(zrt_op_t op);  // throws for values outside zrt_op_t

// Divides count elements of buf by divisor in place (the "average" of ZRT_OP_AVG);
// 16-bit types are divided in fp32 and rounded once.
void divide_buffer(void *buf, size_t count, zrt_dtype_t dtype, int divisor);

}  // namespace zrt
