// The reduction of deterministic mode: contributions are added in rank order 0, 1, ...,
// n-1, in fp32 for the 16-bit types (fp64 for fp64), and rounded once. Every backend's
// deterministic path ends here, so results are bitwise equal across backends, stages and
// runs for the same rank count.
#pragma once

#include <cstddef>

#include "zerort/defs.h"

namespace zrt {

// out[i] = reduce(chunks[0][i], chunks[1][i], ..., chunks[n-1][i]) for i < length, where
// chunk r starts at chunks + r * stride elements. op AVG divides the sum by n before the
// final rounding. out may alias chunk 0.
void ordered_sum(const void *chunks, size_t stride, int n, size_t length, zrt_dtype_t dtype,
                 zrt_op_t op, void *out);

}  // namespace zrt
