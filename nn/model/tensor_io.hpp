// Moving a program's tensors in and out of the model's memory (the execution space's), from
// wherever they lie: host memory, or device memory in a CUDA build (CUDA's unified
// addressing says which, cudaMemcpyDefault).
#pragma once

#include <cstdint>

namespace zrt::nn::model {

/// @p n floats from @p src (host or device) to @p dst in the execution space's memory.
void copy_in(float *dst, const float *src, int64_t n);
/// @p n floats from @p src in the execution space's memory to @p dst (host or device).
void copy_out(float *dst, const float *src, int64_t n);
/// @p n floats from @p src (host or device) to host memory @p dst.
void copy_to_host(float *dst, const float *src, int64_t n);

}  // namespace zrt::nn::model
