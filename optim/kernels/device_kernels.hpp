// The optimizer's kernels on device memory (engine.memory_space = device, optimizer not
// offloaded), enqueued on a stream in order with the engine's copies: the same operations
// as the CPU KernelTable (kernels.hpp), element for element, so the device engine matches
// the host engine bitwise in deterministic mode when the CPU kernels are the scalar ones
// (kernels.isa = scalar; the vector ISAs sum norms in other orders).
//
// Two implementations: on the emulated device the CPU kernels themselves, run by the
// stream's worker (kernels_emulated.cpp); on a GPU, CUDA kernels
// (cuda/cuda_kernels.cu; cuda/no_cuda_kernels.cpp in builds without CUDA).
//
// Results that the host needs (norm partials, overflow flags, LAMB's sums) are written to
// host memory the caller keeps alive; they are valid once the stream has passed the call
// (Stream::synchronize).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "memory/device.hpp"
#include "optim/kernels/kernels.hpp"

namespace zrt {

class DeviceKernels {
 public:
  virtual ~DeviceKernels() = default;
  virtual const char *name() const = 0;  // "emulated (scalar)", "cuda"

  virtual void adam(Stream &s, const AdamStep &step, const OptimRange &r) = 0;
  virtual void sgd(Stream &s, const SgdStep &step, const OptimRange &r) = 0;
  // Host outputs: *w_sq and *u_sq as KernelTable::lamb_moments computes them.
  virtual void lamb_moments(Stream &s, const AdamStep &step, const OptimRange &r, double *w_sq,
                            double *u_sq) = 0;
  virtual void lamb_apply(Stream &s, const AdamStep &step, const OptimRange &r, float lr_trust) = 0;
  // Host output: ceil(count / kNormBlock) partial sums, block k the sum of squares of
  // elements [k * kNormBlock, (k + 1) * kNormBlock) as KernelTable::sum_squares sums it.
  virtual void block_sum_squares(Stream &s, const void *values, zrt_dtype_t dtype, size_t count,
                                 double *out) = 0;
  // Host output: *out = 1 if any value is Inf or NaN, else left as it is.
  virtual void non_finite(Stream &s, const void *values, zrt_dtype_t dtype, size_t count,
                          int *out) = 0;
  // count fp32 values to dtype (round to nearest even).
  virtual void convert(Stream &s, const float *in, void *out, zrt_dtype_t dtype, size_t count) = 0;
  // dst += src, count values of dtype (16-bit ones added in fp32 and rounded once).
  virtual void accumulate(Stream &s, void *dst, const void *src, size_t count,
                          zrt_dtype_t dtype) = 0;
};

// The kernels for device (emulated: cpu runs on the stream's worker). Throws
// Error(ZRT_ERR_NOT_SUPPORTED) when this build has no kernels for it.
std::unique_ptr<DeviceKernels> make_device_kernels(Device &device, const KernelTable &cpu);

// The emulated device's (kernels_emulated.cpp) and the GPU's (cuda/); the GPU's factory
// returns nullptr with the reason in a build without CUDA.
std::unique_ptr<DeviceKernels> make_emulated_kernels(const KernelTable &cpu);
std::unique_ptr<DeviceKernels> make_cuda_kernels(int device, std::string *why);

}  // namespace zrt
