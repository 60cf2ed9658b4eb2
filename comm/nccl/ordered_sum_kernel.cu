#include <cuda_fp16.h>

#include <cstdint>

#include "comm/nccl/ordered_sum_kernel.hpp"

namespace zrt {

namespace {

// Explicitly rounded operations: nothing may be fused or reordered, as on the host.
__device__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ double add(double a, double b) { return __dadd_rn(a, b); }
__device__ float divide(float a, float b) { return __fdiv_rn(a, b); }
__device__ double divide(double a, double b) { return __ddiv_rn(a, b); }

// bf16 and fp16 are stored as uint16_t; a tag type picks the conversion.
struct Bf16 {};
struct Fp16 {};

__device__ float widen(uint16_t h, Bf16) { return __uint_as_float(static_cast<uint32_t>(h) << 16); }
__device__ float widen(uint16_t h, Fp16) { return __half2float(__ushort_as_half(h)); }

// The host's float_to_bf16: round to nearest even, NaNs made quiet.
__device__ uint16_t narrow(float f, Bf16) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
__device__ uint16_t narrow(float f, Fp16) { return __half_as_ushort(__float2half_rn(f)); }

template <class T>
__global__ void sum_wide(const T *chunks, size_t stride, int n, size_t length, bool avg, T *out) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < length;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    T acc = chunks[i];
    for (int r = 1; r < n; ++r) acc = add(acc, chunks[static_cast<size_t>(r) * stride + i]);
    if (avg) acc = divide(acc, static_cast<T>(n));
    out[i] = acc;
  }
}

template <class Tag>
__global__ void sum_half(const uint16_t *chunks, size_t stride, int n, size_t length, bool avg,
                         uint16_t *out) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < length;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float acc = widen(chunks[i], Tag{});
    for (int r = 1; r < n; ++r)
      acc = add(acc, widen(chunks[static_cast<size_t>(r) * stride + i], Tag{}));
    if (avg) acc = divide(acc, static_cast<float>(n));
    out[i] = narrow(acc, Tag{});
  }
}

}  // namespace

cudaError_t launch_ordered_sum(const void *chunks, size_t stride, int n, size_t length,
                               zrt_dtype_t dtype, zrt_op_t op, void *out, cudaStream_t stream) {
  if (length == 0) return cudaSuccess;
  const unsigned threads = 256;
  const size_t wanted = (length + threads - 1) / threads;
  const unsigned blocks = static_cast<unsigned>(wanted < 4096 ? wanted : 4096);
  const bool avg = op == ZRT_OP_AVG;
  switch (dtype) {
    case ZRT_DTYPE_FP32:
      sum_wide<<<blocks, threads, 0, stream>>>(static_cast<const float *>(chunks), stride, n,
                                               length, avg, static_cast<float *>(out));
      break;
    case ZRT_DTYPE_FP64:
      sum_wide<<<blocks, threads, 0, stream>>>(static_cast<const double *>(chunks), stride, n,
                                               length, avg, static_cast<double *>(out));
      break;
    case ZRT_DTYPE_BF16:
      sum_half<Bf16><<<blocks, threads, 0, stream>>>(static_cast<const uint16_t *>(chunks), stride,
                                                     n, length, avg, static_cast<uint16_t *>(out));
      break;
    case ZRT_DTYPE_FP16:
      sum_half<Fp16><<<blocks, threads, 0, stream>>>(static_cast<const uint16_t *>(chunks), stride,
                                                     n, length, avg, static_cast<uint16_t *>(out));
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace zrt
