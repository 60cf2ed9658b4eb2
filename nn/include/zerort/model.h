/**
 * @file model.h
 * @brief Models from a configuration file, trained with the ZeRO engine in one call a step
 * (libzerort_nn, CMake target zerort::nn, pkg-config zerort-nn).
 *
 * A model is a sequence of layers (linear, activations, LayerNorm, dropout, residual
 * blocks, transformer blocks, embeddings) with a loss, an optimizer and the engine's
 * settings, all read from one JSON (or YAML) file: zerort's own form, or TorchFort's blocks
 * (`general`, `model` of type `mlp`, `loss`, `optimizer`, `lr_scheduler`); the manual's
 * chapter docs/models.md lists every key. The parameters, gradients and optimizer state live
 * in a ZeRO engine (engine.h) at the configured stage: stage 3 gathers each layer's
 * parameters inside forward and backward. Every layer computes on Kokkos views (the
 * layers are <zerort/nn.hpp>); a program in C or Fortran needs no Kokkos of its own: the
 * first zrt_model_create initializes Kokkos when the program has not, and finalizes it at
 * exit.
 *
 * Life cycle:
 * @code
 *   zrt_model_create(context, "model.json", &model)      collective
 *   loop: zrt_model_train_step(model, &input, &target, &loss)   collective
 *   zrt_model_forward(model, &input, &output)            collective (stage 3 gathers)
 *   zrt_model_save / zrt_model_load / zrt_model_export   collective
 *   zrt_model_destroy(model)                             collective
 * @endcode
 *
 * Shapes: a tensor's first dimension is the batch (any size, and it may change from call
 * to call); the others are the per-sample shape the configuration declares ("input") and
 * the layers produce. Shapes are row-major (C order): a Fortran array x(features, batch) is
 * the C shape {batch, features}, as the Fortran module passes it.
 *
 * Errors: every call returns a status and leaves the message in zrt_last_error_message();
 * a collective call agrees on the status across the ranks first, so a bad argument on one
 * rank fails the call on every rank (naming that rank) instead of leaving the others in a
 * collective. A failed call changes nothing in the model.
 */
#ifndef ZERORT_MODEL_H
#define ZERORT_MODEL_H

#include <zerort/context.h>
#include <zerort/defs.h>
#include <zerort/status.h>

ZRT_BEGIN_DECLS

/** A configured model (opaque). */
typedef struct zrt_model_s *zrt_model_h;

/** The most dimensions a zrt_tensor_t has (the batch included). */
#define ZRT_TENSOR_MAX_DIMS 8

/**
 * @brief A tensor handed to a model: its values in host memory or, with a CUDA build, in
 * device memory (where the pointer lies is asked of CUDA), fp32, row-major.
 */
typedef struct zrt_tensor {
  void *data;                         /**< the values; read-only for inputs and targets */
  zrt_dtype_t dtype;                  /**< ZRT_DTYPE_FP32 */
  int ndim;                           /**< 1 .. ZRT_TENSOR_MAX_DIMS, the batch included */
  int64_t shape[ZRT_TENSOR_MAX_DIMS]; /**< shape[0] is the batch */
} zrt_tensor_t;

/** Formats of zrt_model_export. */
typedef enum zrt_model_format {
  ZRT_MODEL_FORMAT_SAFETENSORS = 0, /**< the parameters by name, fp32 (Hugging Face) */
  ZRT_MODEL_FORMAT_ONNX = 1,        /**< the model's graph with its weights, opset 17 */
  ZRT_MODEL_FORMAT_FORCE_INT_ = -2147483647 - 1
} zrt_model_format_t;

/** What a model is (zrt_model_query). */
typedef struct zrt_model_info {
  int64_t parameters;                       /**< elements of all parameter tensors */
  int input_ndim;                           /**< per-sample dimensions of the input */
  int64_t input_shape[ZRT_TENSOR_MAX_DIMS]; /**< per sample (no batch dimension) */
  int output_ndim;                          /**< per-sample dimensions of the output */
  int64_t output_shape[ZRT_TENSOR_MAX_DIMS];
  int64_t optimizer_steps; /**< updates applied so far (loaded from a checkpoint too) */
  int stage;               /**< the engine's ZeRO stage */
  double last_loss;        /**< the loss of the last training step (NaN before the first) */
  double last_lr;          /**< the learning rate of the last update */
} zrt_model_info_t;

/**
 * @brief Create a model from a configuration: a file (.json, or .yaml / .yml where zerort
 * was built with yaml-cpp) or, when @p config begins with '{', the JSON text itself.
 * Registers the parameters with a new engine over @p context's ranks and sets them to their
 * initial values (the configuration's seed: the same on every rank, whatever their number).
 * Unknown layers and keys are refused naming the nearest known one; shapes that do not chain
 * name the layer and the dimension (ZRT_ERR_CONFIG).
 * Collective, blocking. Not thread-safe with other calls on @p context's communicator.
 */
ZRT_API zrt_status_t zrt_model_create(zrt_context_h context, const char *config,
                                      zrt_model_h *model_p);

/**
 * @brief Destroy a model and its engine. Collective, blocking.
 */
ZRT_API zrt_status_t zrt_model_destroy(zrt_model_h model);

/**
 * @brief One training micro-step on this rank's batch: forward, the configured loss
 * against @p target, backward (each gradient handed to the engine as it completes, so the
 * reductions overlap the rest of backward), and the engine's step, which updates the
 * parameters on the last micro-step of each gradient accumulation (clipping, loss scaling
 * and the skipping of non-finite steps as the engine does them).
 * @param input  (batch, input shape...)
 * @param target (batch, output shape...) for mse and l1; (batch, positions...) of class
 *               indices (as fp32 values) for cross_entropy
 * @param[out] loss_p the loss of this micro-step, averaged over every rank's batch (the
 *               mean over ranks of each rank's mean); may be NULL.
 * A model whose loss is "external" refuses this call: use zrt_model_forward_train and
 * zrt_model_backward_step.
 * Collective, blocking. Not thread-safe with other calls on @p model.
 */
ZRT_API zrt_status_t zrt_model_train_step(zrt_model_h model, const zrt_tensor_t *input,
                                          const zrt_tensor_t *target, double *loss_p);

/**
 * @brief The forward half of a training step whose loss the program computes: writes the
 * model's output for @p input and keeps what backward needs. The next call on the model must
 * be zrt_model_backward_step (or another zrt_model_forward_train, which drops this one).
 * Collective, blocking.
 */
ZRT_API zrt_status_t zrt_model_forward_train(zrt_model_h model, const zrt_tensor_t *input,
                                             zrt_tensor_t *output);

/**
 * @brief The backward half: @p output_grad is the gradient of the program's loss with
 * respect to the output of the last zrt_model_forward_train (same shape); backward, then
 * the engine's step as in zrt_model_train_step. Collective, blocking.
 */
ZRT_API zrt_status_t zrt_model_backward_step(zrt_model_h model, const zrt_tensor_t *output_grad);

/**
 * @brief Inference: @p output = the model applied to @p input (dropout off), nothing kept.
 * @param output its shape must be (batch, output shape...), batch as @p input's.
 * Collective, blocking (stage 3 gathers each layer's parameters); local at stages 0-2.
 * Every rank may pass its own batch size.
 */
ZRT_API zrt_status_t zrt_model_forward(zrt_model_h model, const zrt_tensor_t *input,
                                       zrt_tensor_t *output);

/**
 * @brief Write the model's states (parameters, optimizer state, step, the configuration of
 * its layers) to the HDF5 checkpoint @p path (zrt_checkpoint_save): a checkpoint any number
 * of ranks at any stage loads. Collective, blocking.
 */
ZRT_API zrt_status_t zrt_model_save(zrt_model_h model, const char *path);

/**
 * @brief Replace the model's states with those of @p path, saved by zrt_model_save from a
 * model of the same layers (on any number of ranks, at any stage). A checkpoint of other
 * layers is refused and changes nothing. Collective, blocking.
 */
ZRT_API zrt_status_t zrt_model_load(zrt_model_h model, const char *path);

/**
 * @brief Write the model's parameters to @p path in @p format: safetensors (each parameter
 * by its name, fp32) or ONNX (the inference graph, input "input" and output "output" with a
 * dynamic batch; ZRT_ERR_NOT_SUPPORTED where zerort was built without ONNX). Rank 0
 * writes; every rank takes part in gathering the parameters.
 * Collective, blocking.
 */
ZRT_API zrt_status_t zrt_model_export(zrt_model_h model, const char *path,
                                      zrt_model_format_t format);

/**
 * @brief What @p model is: its parameter count, per-sample input and output shapes, steps.
 * Local, non-blocking.
 */
ZRT_API zrt_status_t zrt_model_query(zrt_model_h model, zrt_model_info_t *info_p);

/**
 * @brief The model's layers, one per line with their output shapes and parameter counts,
 * then the engine's line, NUL-terminated into @p buf (truncated to @p size).
 * @param[out] length_p the full length without the NUL; may be NULL.
 * Local, non-blocking.
 */
ZRT_API zrt_status_t zrt_model_describe(zrt_model_h model, char *buf, size_t size,
                                        size_t *length_p);

ZRT_END_DECLS

#endif /* ZERORT_MODEL_H */
