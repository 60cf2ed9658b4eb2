// The C entry points of zerort/optimizer.h: the engine's kernels on the caller's arrays.
#include <cmath>

#include "comm/dtype.hpp"
#include "optim/engine_part.hpp"
#include "runtime/field_table.hpp"
#include "zerort/optimizer.h"

using namespace zrt;

namespace {

using Args = zrt_adam_args_t;

// The arguments with the defaults of the fields the caller did not set.
const ParamTable<Args, Args> kArgs{
    "zrt_adam_args_field",
    "args",
    {
        {ZRT_ADAM_ARG_FIELD_LR, "lr", nullptr, nullptr,
         [](const Args &a, std::map<std::string, std::string> &, Args &o) { o.lr = a.lr; }},
        {ZRT_ADAM_ARG_FIELD_BETAS, "beta1, beta2", nullptr, nullptr,
         [](const Args &a, std::map<std::string, std::string> &, Args &o) {
           o.beta1 = a.beta1;
           o.beta2 = a.beta2;
         }},
        {ZRT_ADAM_ARG_FIELD_EPS, "eps", nullptr, nullptr,
         [](const Args &a, std::map<std::string, std::string> &, Args &o) { o.eps = a.eps; }},
        {ZRT_ADAM_ARG_FIELD_WEIGHT_DECAY, "weight_decay", nullptr, nullptr,
         [](const Args &a, std::map<std::string, std::string> &, Args &o) {
           o.weight_decay = a.weight_decay;
         }},
        {ZRT_ADAM_ARG_FIELD_DECOUPLED, "decoupled", nullptr, nullptr,
         [](const Args &a, std::map<std::string, std::string> &, Args &o) {
           o.decoupled = a.decoupled;
         }},
        {ZRT_ADAM_ARG_FIELD_STEP, "step", nullptr, nullptr,
         [](const Args &a, std::map<std::string, std::string> &, Args &o) { o.step = a.step; }},
        {ZRT_ADAM_ARG_FIELD_GRAD_SCALE, "grad_scale", nullptr, nullptr,
         [](const Args &a, std::map<std::string, std::string> &, Args &o) {
           o.grad_scale = a.grad_scale;
         }},
    }};

Args resolve(const Args *in) {
  require_nonnull(in, "args");
  check_field_mask(in->field_mask, kArgs.known(), "args");
  struct Required {
    uint64_t bit;
    const char *member, *bit_name;
  };
  for (const Required &r : {Required{ZRT_ADAM_ARG_FIELD_LR, "lr", "ZRT_ADAM_ARG_FIELD_LR"},
                            Required{ZRT_ADAM_ARG_FIELD_STEP, "step", "ZRT_ADAM_ARG_FIELD_STEP"}})
    if ((in->field_mask & r.bit) == 0)
      fail(ZRT_ERR_INVALID_ARGUMENT, "args->{} is required: set it and {} in args->field_mask",
           r.member, r.bit_name);
  Args a{};
  a.beta1 = 0.9;
  a.beta2 = 0.999;
  a.eps = 1e-8;
  a.decoupled = 1;
  a.grad_scale = 1;
  std::map<std::string, std::string> no_keys;
  kArgs.read(in, no_keys, a);
  return a;
}

}  // namespace

extern "C" {

ZRT_API zrt_status_t zrt_optimizer_adam(zrt_context_h context, const zrt_adam_args_t *args_in,
                                        float *weights, float *m, float *v, const void *grads,
                                        zrt_dtype_t grad_dtype, size_t count) {
  return abi_call("zrt_optimizer_adam", [&] {
    EnginePart &part = context_from(context).part<EnginePart>();
    const Args resolved = resolve(args_in);
    const Args *args = &resolved;
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
    if (!std::isfinite(args->grad_scale))
      fail(ZRT_ERR_INVALID_ARGUMENT, "args->grad_scale is {}: it must be finite", args->grad_scale);
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
