// Element types: sizes and names, and the whole-buffer operations on them that the layers
// share (conversion between dtypes, accumulation, the division of ZRT_OP_AVG). The scalar
// conversions between fp32 and the 16-bit formats are runtime/half.hpp's. Half-precision
// values are added by converting to fp32, adding, and rounding back (round to nearest
// even), so every pairwise sum is as exact as fp32 allows.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "runtime/half.hpp"
#include "zerort/defs.h"

namespace zrt {

// Bytes per element; throws Error(ZRT_ERR_INVALID_ARGUMENT) naming the accepted values.
size_t dtype_size(zrt_dtype_t dtype);
const char *dtype_name(zrt_dtype_t dtype);  // "fp32", or "unknown dtype"
const char *op_name(zrt_op_t op);
void check_op(zrt_op_t op);  // throws for values outside zrt_op_t

// Divides count elements of buf by divisor in place (the "average" of ZRT_OP_AVG);
// 16-bit types are divided in fp32 and rounded once.
void divide_buffer(void *buf, size_t count, zrt_dtype_t dtype, int divisor);

// Converts count values from one dtype to another through fp32 (fp64 to and from fp64 keeps
// its precision), rounding to nearest even; a plain copy when the dtypes are equal. The
// buffers must not overlap. Throws Error(ZRT_ERR_INVALID_ARGUMENT) for a bad dtype.
void convert_values(const void *in, zrt_dtype_t from, void *out, zrt_dtype_t to, size_t count);

// dst[i] += src[i] for count values of a floating dtype (gradient accumulation); 16-bit
// values are added in fp32 and rounded once.
void accumulate(void *dst, const void *src, size_t count, zrt_dtype_t dtype);

}  // namespace zrt
