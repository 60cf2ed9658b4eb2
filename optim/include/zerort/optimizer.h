/**
 * @file zerort/optimizer.h
 * @brief zerort's CPU optimizer kernels on your own arrays (what DeepSpeed's CPU Adam is to
 * ZeRO-Offload): vectorized for AVX-512 / AVX2 with a scalar fallback, chosen at run time,
 * multi-threaded on the rank's own cores. The engine uses the same kernels.
 */
#ifndef ZERORT_OPTIMIZER_H
#define ZERORT_OPTIMIZER_H

#include "zerort/context.h"
#include "zerort/defs.h"
#include "zerort/status.h"

ZRT_BEGIN_DECLS

/**
 * @name zrt_adam_args_field
 * Which fields of zrt_adam_args_t the caller set.
 * @{
 */
/** required */
#define ZRT_ADAM_ARG_FIELD_LR ZRT_BIT(0)
/** beta1, beta2 */
#define ZRT_ADAM_ARG_FIELD_BETAS ZRT_BIT(1)
#define ZRT_ADAM_ARG_FIELD_EPS ZRT_BIT(2)
#define ZRT_ADAM_ARG_FIELD_WEIGHT_DECAY ZRT_BIT(3)
#define ZRT_ADAM_ARG_FIELD_DECOUPLED ZRT_BIT(4)
/** required */
#define ZRT_ADAM_ARG_FIELD_STEP ZRT_BIT(5)
#define ZRT_ADAM_ARG_FIELD_GRAD_SCALE ZRT_BIT(6)
/** every field of this header's version */
#define ZRT_ADAM_ARG_FIELD_ALL (ZRT_BIT(7) - 1)
/** @} */

/**
 * @brief One Adam/AdamW step's hyper-parameters. Set field_mask to the fields you fill;
 * lr and step are required, the others take the defaults shown.
 */
typedef struct zrt_adam_args {
  uint64_t field_mask;
  double lr;           /**< learning rate, >= 0 */
  double beta1, beta2; /**< moment coefficients, in [0, 1); default 0.9, 0.999 */
  double eps;          /**< denominator epsilon, > 0; default 1e-8 */
  double weight_decay; /**< >= 0; default 0 */
  int decoupled;       /**< 1: AdamW (decay applied to the weights), 0: Adam (L2 on the
                            gradient); default 1 */
  int64_t step;        /**< 1 for the first step: bias corrections use it */
  double grad_scale;   /**< gradients are multiplied by this first (unscaling, clipping);
                            default 1 */
} zrt_adam_args_t;

/**
 * @brief Update @p count weights and their Adam moments in place from @p grads (fp32,
 * bf16 or fp16). The arrays must not overlap. A missing required field, an unknown bit or
 * a value out of range fails with ZRT_ERR_INVALID_ARGUMENT naming it.
 * Local, blocking; uses the context's optimizer threads (thread-safe across contexts, not
 * for concurrent calls on one context).
 */
ZRT_API zrt_status_t zrt_optimizer_adam(zrt_context_h context, const zrt_adam_args_t *args,
                                        float *weights, float *m, float *v, const void *grads,
                                        zrt_dtype_t grad_dtype, size_t count);

/**
 * @brief The instruction set the optimizer kernels use on this CPU: "avx512", "avx2" or
 * "scalar" (the kernels.isa configuration key can force one). The string is static.
 * Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_optimizer_isa(zrt_context_h context, const char **isa_p);

ZRT_END_DECLS

#endif /* ZERORT_OPTIMIZER_H */
