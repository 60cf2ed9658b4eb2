// The reduction of deterministic mode: contributions are added in rank order 0, 1, ...,
// n-1, in fp32 for the 16-bit types (fp64 for fp64), and rounded once. Every backend's
// deterministic path ends here, so results are bitwise equal across backends, stages and
// runs for the same rank count. The host backends (shm, and ucx in deterministic mode)
// reduce with it always: one rounding is both the fastest and the most accurate sum.
//
// The kernels are vectorized (AVX2 + F16C when the CPU has them, chosen at run time) and
// produce exactly the scalar loop's bits: every element is the same chain of IEEE
// additions in the same order, and the conversions round to nearest even either way.
#pragma once

#include <cstddef>

#include "zerort/defs.h"

namespace zrt {

// out[i] = reduce(chunks[0][i], chunks[1][i], ..., chunks[n-1][i]) for i < length, where
// chunk r starts at chunks + r * stride elements. op AVG divides the sum by n before the
// final rounding. out may alias chunk 0.
void ordered_sum(const void *chunks, size_t stride, int n, size_t length, zrt_dtype_t dtype,
                 zrt_op_t op, void *out);

// The same over n separately placed sources: out[i] = reduce(sources[0][i], ...,
// sources[n-1][i]). out may be any one of the sources (element i is read from every
// source before it is written), but must not overlap one partially. With stream, the
// vector kernel writes fp32 with streaming stores, around the cache, for an output that is
// not read again soon (streaming_copy.hpp): the same bits.
void ordered_sum_sources(const void *const *sources, int n, size_t length, zrt_dtype_t dtype,
                         zrt_op_t op, void *out, bool stream = false);

// "avx2" when the vector kernels run, "generic" otherwise (for zrt-info and benchmarks).
const char *ordered_sum_isa();

namespace detail {
// The two implementations, for the tests that compare them bit for bit.
void ordered_sum_generic(const void *const *sources, int n, size_t length, zrt_dtype_t dtype,
                         zrt_op_t op, void *out);
void ordered_sum_avx2(const void *const *sources, int n, size_t length, zrt_dtype_t dtype,
                      zrt_op_t op, void *out, bool stream = false);
bool cpu_has_avx2();
}  // namespace detail

}  // namespace zrt
