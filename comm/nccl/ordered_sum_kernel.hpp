// The deterministic reduction of the nccl backend on the device: the same arithmetic as
// comm/ordered_sum.hpp (rank-order additions in fp32, fp64 for fp64, one rounding), so
// device results are bitwise equal to the host backends'.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "zerort/defs.h"

namespace zrt {

// out[i] = reduce(chunks[0][i], ..., chunks[n-1][i]), chunk r at chunks + r * stride
// elements, for i < length; enqueued on stream. Returns the launch error.
cudaError_t launch_ordered_sum(const void *chunks, size_t stride, int n, size_t length,
                               zrt_dtype_t dtype, zrt_op_t op, void *out, cudaStream_t stream);

}  // namespace zrt
