// The optimizer's hot loops: Adam/AdamW, SGD, LAMB, gradient norms and overflow checks on
// one contiguous range of a shard. Each kernel exists for AVX-512, AVX2+FMA and plain
// scalar code; select_kernels() picks the best the CPU has (or the one the kernels.isa
// configuration key asks for). Within one ISA every element goes through exactly the same
// operations wherever it sits in a range (partial vectors run through the vector body on a
// padded copy), so results do not depend on how ranges are cut: the ZeRO stages, which cut
// differently, give bitwise-identical parameters.
#pragma once

#include <cstddef>
#include <cstdint>

#include "zerort/defs.h"

namespace zrt {

// Hyper-parameters of one Adam/AdamW/LAMB step, precomputed per step.
struct AdamStep {
  float beta1 = 0.9f, beta2 = 0.999f;
  float one_minus_beta1 = 0.1f, one_minus_beta2 = 0.001f;
  float eps = 1e-8f;
  float step_size = 0;     // -lr / (1 - beta1^t)
  float inv_bc1 = 1;       // 1 / (1 - beta1^t), for LAMB's direction
  float weight_decay = 0;  // LAMB: added to the direction
  float inv_sqrt_bc2 = 1;  // 1 / sqrt(1 - beta2^t)
  float decay = 0;         // AdamW: -lr * weight_decay, applied to the weight
  float l2 = 0;            // Adam: weight_decay, added to the gradient
  float grad_scale = 1;    // unscale * clip * 1/accumulation
};

struct SgdStep {
  float lr = 0, momentum = 0, weight_decay = 0, grad_scale = 1;
  bool nesterov = false;
};

// One contiguous range: fp32 master weights and state, gradients in the compute dtype,
// and optionally a compute-dtype copy of the weights to refresh after the update.
struct OptimRange {
  float *weights = nullptr;
  float *m = nullptr;  // Adam/LAMB first moment, SGD momentum buffer
  float *v = nullptr;  // Adam/LAMB second moment
  const void *grads = nullptr;
  zrt_dtype_t grad_dtype = ZRT_DTYPE_FP32;
  void *copy = nullptr;  // compute-dtype weights to write, or nullptr
  zrt_dtype_t copy_dtype = ZRT_DTYPE_BF16;
  size_t count = 0;
};

struct KernelTable {
  const char *isa;
  // Adam/AdamW on one range.
  void (*adam)(const AdamStep &s, const OptimRange &r);
  void (*sgd)(const SgdStep &s, const OptimRange &r);
  // LAMB in two passes: update the moments and accumulate sum(w^2) and sum(u^2) of the
  // update direction u; then apply w -= lr * trust * u, recomputing u from the moments.
  void (*lamb_moments)(const AdamStep &s, const OptimRange &r, double *w_sq, double *u_sq);
  void (*lamb_apply)(const AdamStep &s, const OptimRange &r, float lr_trust);
  // Sum of squares of count values of dtype, in double, over fixed blocks of kNormBlock
  // elements added in order (so the result depends only on the values and the range).
  double (*sum_squares)(const void *values, zrt_dtype_t dtype, size_t count);
  // True if any of count values is Inf or NaN.
  bool (*non_finite)(const void *values, zrt_dtype_t dtype, size_t count);
  // Converts count fp32 values to dtype (round to nearest even) into out.
  void (*convert)(const float *in, void *out, zrt_dtype_t dtype, size_t count);
};

inline constexpr size_t kNormBlock = 4096;

// isa: "auto", "avx512", "avx2" or "scalar". Throws Error(ZRT_ERR_NOT_SUPPORTED) when the
// CPU lacks the ISA asked for.
const KernelTable &select_kernels(const char *isa);
bool cpu_has_avx2();
bool cpu_has_avx512();

// The per-ISA tables (kernels_scalar.cpp, kernels_avx2.cpp, kernels_avx512.cpp).
const KernelTable &scalar_kernels();
const KernelTable &avx2_kernels();
const KernelTable &avx512_kernels();

}  // namespace zrt
