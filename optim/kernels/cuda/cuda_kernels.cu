// The optimizer's kernels on a GPU (device_kernels.hpp). Each kernel performs, element for
// element, the operations of the CPU's scalar kernels (kernel_body.hpp with the Scalar
// policy of vector_ops.hpp): fmaf where they fuse, IEEE division and square root, round to
// nearest even into bf16 and fp16, and the same summation orders for the sums the host
// needs. Compiled with -fmad=false, so no other multiply-add is fused. With
// kernels.isa = scalar the device engine then gives the host engine's parameters bitwise.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "optim/kernels/device_kernels.hpp"
#include "runtime/error.hpp"

namespace zrt {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float bf16_to_f32(uint16_t h) {
  return __uint_as_float(static_cast<uint32_t>(h) << 16);
}

__device__ __forceinline__ uint16_t f32_to_bf16(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

__device__ __forceinline__ float load_value(const void *p, zrt_dtype_t dtype, size_t i) {
  switch (dtype) {
    case ZRT_DTYPE_BF16:
      return bf16_to_f32(static_cast<const uint16_t *>(p)[i]);
    case ZRT_DTYPE_FP16:
      return __half2float(static_cast<const __half *>(p)[i]);
    default:
      return static_cast<const float *>(p)[i];
  }
}

__device__ __forceinline__ void store_value(void *p, zrt_dtype_t dtype, size_t i, float v) {
  switch (dtype) {
    case ZRT_DTYPE_BF16:
      static_cast<uint16_t *>(p)[i] = f32_to_bf16(v);
      break;
    case ZRT_DTYPE_FP16:
      static_cast<__half *>(p)[i] = __float2half_rn(v);
      break;
    default:
      static_cast<float *>(p)[i] = v;
      break;
  }
}

__global__ void adam_kernel(AdamStep s, OptimRange r) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= r.count) return;
  float w = r.weights[i];
  float g = __fmul_rn(load_value(r.grads, r.grad_dtype, i), s.grad_scale);
  if (s.l2 != 0) g = fmaf(s.l2, w, g);
  float m = fmaf(r.m[i], s.beta1, __fmul_rn(g, s.one_minus_beta1));
  float v = fmaf(r.v[i], s.beta2, __fmul_rn(__fmul_rn(g, g), s.one_minus_beta2));
  float denom = fmaf(__fsqrt_rn(v), s.inv_sqrt_bc2, s.eps);
  float update = __fdiv_rn(m, denom);
  if (s.decay != 0) w = fmaf(w, s.decay, w);
  w = fmaf(update, s.step_size, w);
  r.weights[i] = w;
  r.m[i] = m;
  r.v[i] = v;
  if (r.copy != nullptr) store_value(r.copy, r.copy_dtype, i, w);
}

__global__ void sgd_kernel(SgdStep s, OptimRange r) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= r.count) return;
  float w = r.weights[i];
  float g = __fmul_rn(load_value(r.grads, r.grad_dtype, i), s.grad_scale);
  if (s.weight_decay != 0) g = fmaf(s.weight_decay, w, g);
  if (s.momentum != 0) {
    float buf = fmaf(r.m[i], s.momentum, g);
    r.m[i] = buf;
    g = s.nesterov ? fmaf(buf, s.momentum, g) : buf;
  }
  w = fmaf(g, -s.lr, w);
  r.weights[i] = w;
  if (r.copy != nullptr) store_value(r.copy, r.copy_dtype, i, w);
}

__device__ __forceinline__ float lamb_direction(const AdamStep &s, float w, float m, float v) {
  float denom = fmaf(__fsqrt_rn(v), s.inv_sqrt_bc2, s.eps);
  float u = __fdiv_rn(__fmul_rn(m, s.inv_bc1), denom);
  return fmaf(w, s.weight_decay, u);
}

// The moments, element-parallel; the squares for the sums, per element in double.
__global__ void lamb_moments_kernel(AdamStep s, OptimRange r, double *w_sq, double *u_sq) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= r.count) return;
  float w = r.weights[i];
  float g = __fmul_rn(load_value(r.grads, r.grad_dtype, i), s.grad_scale);
  float m = fmaf(r.m[i], s.beta1, __fmul_rn(g, s.one_minus_beta1));
  float v = fmaf(r.v[i], s.beta2, __fmul_rn(__fmul_rn(g, g), s.one_minus_beta2));
  r.m[i] = m;
  r.v[i] = v;
  float u = lamb_direction(s, w, m, v);
  w_sq[i] = __dmul_rn(static_cast<double>(w), static_cast<double>(w));
  u_sq[i] = __dmul_rn(static_cast<double>(u), static_cast<double>(u));
}

// The scalar kernel adds the squares one by one in element order: so does this, in one
// thread (correct first; a tree sum would change the bits).
__global__ void ordered_sum_kernel(const double *values, size_t count, double *out) {
  double total = 0;
  for (size_t i = 0; i < count; ++i)
    total = __dadd_rn(total, values[i]);
  *out = total;
}

__global__ void lamb_apply_kernel(AdamStep s, OptimRange r, float lr_trust) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= r.count) return;
  float w = r.weights[i];
  w = fmaf(lamb_direction(s, w, r.m[i], r.v[i]), -lr_trust, w);
  r.weights[i] = w;
  if (r.copy != nullptr) store_value(r.copy, r.copy_dtype, i, w);
}

// One thread per block of kNormBlock elements, adding in element order as the scalar CPU
// kernel does.
__global__ void block_sum_squares_kernel(const void *values, zrt_dtype_t dtype, size_t count,
                                         double *out) {
  size_t b = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  size_t first = b * kNormBlock;
  if (first >= count) return;
  size_t last = first + kNormBlock < count ? first + kNormBlock : count;
  double sum = 0;
  for (size_t i = first; i < last; ++i) {
    double x = load_value(values, dtype, i);
    sum = __dadd_rn(sum, __dmul_rn(x, x));
  }
  out[b] = sum;
}

__global__ void non_finite_kernel(const void *values, zrt_dtype_t dtype, size_t count, int *flag) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  if (!isfinite(load_value(values, dtype, i))) atomicOr(flag, 1);
}

__global__ void convert_kernel(const float *in, void *out, zrt_dtype_t dtype, size_t count) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < count) store_value(out, dtype, i, in[i]);
}

__global__ void accumulate_kernel(void *dst, const void *src, size_t count, zrt_dtype_t dtype) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  if (dtype == ZRT_DTYPE_FP64) {
    static_cast<double *>(dst)[i] =
        __dadd_rn(static_cast<double *>(dst)[i], static_cast<const double *>(src)[i]);
    return;
  }
  store_value(dst, dtype, i, __fadd_rn(load_value(dst, dtype, i), load_value(src, dtype, i)));
}

unsigned blocks_for(size_t n) {
  return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

void check(cudaError_t err, const char *what) {
  if (err == cudaSuccess) return;
  cudaGetLastError();
  fail(ZRT_ERR_BACKEND, "{} failed: {}", what, cudaGetErrorString(err));
}

void check_launch(const char *kernel) {
  check(cudaGetLastError(), kernel);
}

cudaStream_t stream_of(Stream &s) {
  return static_cast<cudaStream_t>(s.native());
}

// Device scratch for results the host reads, freed in stream order.
template <class T>
T *scratch(Stream &s, size_t n) {
  void *p = nullptr;
  check(cudaMallocAsync(&p, std::max<size_t>(n, 1) * sizeof(T), stream_of(s)), "cudaMallocAsync");
  return static_cast<T *>(p);
}

void release(Stream &s, void *p) {
  check(cudaFreeAsync(p, stream_of(s)), "cudaFreeAsync");
}

class CudaKernels final : public DeviceKernels {
 public:
  explicit CudaKernels(int device) : device_(device) {}
  const char *name() const override { return "cuda"; }

  void adam(Stream &s, const AdamStep &step, const OptimRange &r) override {
    if (r.count == 0) return;
    adam_kernel<<<blocks_for(r.count), kThreads, 0, stream_of(s)>>>(step, r);
    check_launch("adam_kernel");
  }
  void sgd(Stream &s, const SgdStep &step, const OptimRange &r) override {
    if (r.count == 0) return;
    sgd_kernel<<<blocks_for(r.count), kThreads, 0, stream_of(s)>>>(step, r);
    check_launch("sgd_kernel");
  }
  void lamb_moments(Stream &s, const AdamStep &step, const OptimRange &r, double *w_sq,
                    double *u_sq) override {
    if (r.count == 0) {
      *w_sq = *u_sq = 0;
      return;
    }
    double *squares = scratch<double>(s, 2 * r.count + 2);
    lamb_moments_kernel<<<blocks_for(r.count), kThreads, 0, stream_of(s)>>>(step, r, squares,
                                                                            squares + r.count);
    check_launch("lamb_moments_kernel");
    double *sums = squares + 2 * r.count;
    ordered_sum_kernel<<<1, 1, 0, stream_of(s)>>>(squares, r.count, sums);
    ordered_sum_kernel<<<1, 1, 0, stream_of(s)>>>(squares + r.count, r.count, sums + 1);
    check_launch("ordered_sum_kernel");
    check(cudaMemcpyAsync(w_sq, sums, sizeof(double), cudaMemcpyDeviceToHost, stream_of(s)),
          "cudaMemcpyAsync");
    check(cudaMemcpyAsync(u_sq, sums + 1, sizeof(double), cudaMemcpyDeviceToHost, stream_of(s)),
          "cudaMemcpyAsync");
    release(s, squares);
  }
  void lamb_apply(Stream &s, const AdamStep &step, const OptimRange &r, float lr_trust) override {
    if (r.count == 0) return;
    lamb_apply_kernel<<<blocks_for(r.count), kThreads, 0, stream_of(s)>>>(step, r, lr_trust);
    check_launch("lamb_apply_kernel");
  }
  void block_sum_squares(Stream &s, const void *values, zrt_dtype_t dtype, size_t count,
                         double *out) override {
    const size_t blocks = (count + kNormBlock - 1) / kNormBlock;
    if (blocks == 0) return;
    double *d = scratch<double>(s, blocks);
    block_sum_squares_kernel<<<blocks_for(blocks), kThreads, 0, stream_of(s)>>>(values, dtype,
                                                                                count, d);
    check_launch("block_sum_squares_kernel");
    check(cudaMemcpyAsync(out, d, blocks * sizeof(double), cudaMemcpyDeviceToHost, stream_of(s)),
          "cudaMemcpyAsync");
    release(s, d);
  }
  void non_finite(Stream &s, const void *values, zrt_dtype_t dtype, size_t count,
                  int *out) override {
    if (count == 0) return;
    int *flag = scratch<int>(s, 1);
    check(cudaMemsetAsync(flag, 0, sizeof(int), stream_of(s)), "cudaMemsetAsync");
    non_finite_kernel<<<blocks_for(count), kThreads, 0, stream_of(s)>>>(values, dtype, count, flag);
    check_launch("non_finite_kernel");
    // OR into the host's flag: the host reads it after the stream, so copy into a slot
    // of our own and merge there.
    auto *merge = new int(0);
    check(cudaMemcpyAsync(merge, flag, sizeof(int), cudaMemcpyDeviceToHost, stream_of(s)),
          "cudaMemcpyAsync");
    release(s, flag);
    s.run([merge, out] {
      if (*merge) *out = 1;
      delete merge;
    });
  }
  void convert(Stream &s, const float *in, void *out, zrt_dtype_t dtype, size_t count) override {
    if (count == 0) return;
    convert_kernel<<<blocks_for(count), kThreads, 0, stream_of(s)>>>(in, out, dtype, count);
    check_launch("convert_kernel");
  }
  void accumulate(Stream &s, void *dst, const void *src, size_t count, zrt_dtype_t dtype) override {
    if (count == 0) return;
    accumulate_kernel<<<blocks_for(count), kThreads, 0, stream_of(s)>>>(dst, src, count, dtype);
    check_launch("accumulate_kernel");
  }

 private:
  int device_;
};

}  // namespace

std::unique_ptr<DeviceKernels> make_cuda_kernels(int device, std::string *why) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || device < 0 || device >= count) {
    cudaGetLastError();
    if (why != nullptr)
      *why = err != cudaSuccess ? std::string("no usable CUDA device: ") + cudaGetErrorString(err)
                                : fmt::format("CUDA device {} does not exist", device);
    return nullptr;
  }
  return std::make_unique<CudaKernels>(device);
}

}  // namespace zrt
