// The C entry points of zerort/optimizer.h: the engine's kernels on the caller's arrays.
#include <cmath>

#include "comm/dtype.hpp"
#include "optim/engine_part.hpp"
#include "zerort/optimizer.h"

using namespace zrt;

extern "C" {

ZRT_API zrt_status_t zrt_optimizer_adam(zrt_context_h context, const zrt_adam_args_t *args,
                                        float *weights, float *m, float *v, const void *grads,
                                        zrt_dtype_t grad_dtype, size_t count) {
  return abi_call("zrt_optimizer_adam", [&] {
    EnginePart &part = context_from(context).part<EnginePart>();
    require_nonnull(args, "args");
    if (count > 0) {
      require_nonnull(weights, "weights");
      require_nonnull(m, "m");
      require_nonnull(v, "v");
      require_nonnull(grads, "grads");
    }
    if (grad_dtype != ZRT_DTYPE_FP32 && grad_dtype != ZRT_DTYPE_BF16 &&
        grad_dtype != ZRT_DTYPE_FP16)
      fail(ZRT_ERR_INVALID_ARGUMENT, "grad_dtype {}: accepted values are fp32, bf16, fp16",
           dtype_name(grad_dtype));
    if (args->step < 1)
      fail(ZRT_ERR_INVALID_ARGUMENT, "args->step is {}: steps count from 1", args->step);
    if (!(args->beta1 >= 0 && args->beta1 < 1 && args->beta2 >= 0 && args->beta2 < 1))
      fail(ZRT_ERR_INVALID_ARGUMENT, "args->beta1 and beta2 must lie in [0, 1)");
    if (!(args->eps > 0) || !(args->lr >= 0) || !(args->weight_decay >= 0))
      fail(ZRT_ERR_INVALID_ARGUMENT, "args: eps must be > 0, lr and weight_decay >= 0");
    const double t = static_cast<double>(args->step);
    const double bc1 = 1 - std::pow(args->beta1, t), bc2 = 1 - std::pow(args->beta2, t);
    AdamStep s;
    s.beta1 = static_cast<float>(args->beta1);
    s.beta2 = static_cast<float>(args->beta2);
    s.one_minus_beta1 = static_cast<float>(1 - args->beta1);
    s.one_minus_beta2 = static_cast<float>(1 - args->beta2);
    s.eps = static_cast<float>(args->eps);
    s.step_size = static_cast<float>(-args->lr / bc1);
    s.inv_bc1 = static_cast<float>(1 / bc1);
    s.inv_sqrt_bc2 = static_cast<float>(1 / std::sqrt(bc2));
    s.grad_scale = static_cast<float>(args->grad_scale);
    if (args->decoupled)
      s.decay = static_cast<float>(-args->lr * args->weight_decay);
    else
      s.l2 = static_cast<float>(args->weight_decay);
    const size_t gsize = dtype_size(grad_dtype);
    const KernelTable &k = part.kernels();
    part.threads().parallel_for(count, 4096, [&](size_t begin, size_t end) {
      OptimRange r;
      r.weights = weights + begin;
      r.m = m + begin;
      r.v = v + begin;
      r.grads = static_cast<const char *>(grads) + begin * gsize;
      r.grad_dtype = grad_dtype;
      r.count = end - begin;
      k.adam(s, r);
    });
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_optimizer_isa(zrt_context_h context, const char **isa_p) {
  return abi_call("zrt_optimizer_isa", [&] {
    EnginePart &part = context_from(context).part<EnginePart>();
    require_nonnull(isa_p, "isa_p");
    *isa_p = part.kernels().isa;
    return ZRT_SUCCESS;
  });
}

}  // extern "C"
