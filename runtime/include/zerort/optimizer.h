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

/** @brief One Adam/AdamW step's hyper-parameters. */
typedef struct zrt_adam_args {
  double lr;           /**< learning rate */
  double beta1, beta2; /**< moment coefficients, in [0, 1) */
  double eps;          /**< denominator epsilon, > 0 */
  double weight_decay; /**< >= 0 */
  int decoupled;       /**< 1: AdamW (decay applied to the weights), 0: Adam (L2 on gradient) */
  int64_t step;        /**< 1 for the first step: bias corrections use it */
  double grad_scale;   /**< gradients are multiplied by this first (unscaling, clipping) */
} zrt_adam_args_t;

/**
 * @brief Update @p count weights and their Adam moments in place from @p grads (fp32,
 * bf16 or fp16). The arrays must not overlap.
 * Local, blocking; uses the context's optimizer threads (thread-safe across contexts, not
 * for concurrent calls on one context).
 */
ZRT_API zrt_status_t zrt_optimizer_adam(zrt_context_h context, const zrt_adam_args_t *args,
                                        float *weights, float *m, float *v, const void *grads,
                                        zrt_dtype_t grad_dtype, size_t count);

/**
 * @brief The instruction set the optimizer kernels use on this CPU: "avx512", "avx2" or
 * "scalar" (the kernels.isa configuration key can force one). Local.
 */
ZRT_API zrt_status_t zrt_optimizer_isa(zrt_context_h context, const char **isa_p);

ZRT_END_DECLS

#endif /* ZERORT_OPTIMIZER_H */
