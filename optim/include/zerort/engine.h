/**
 * @file zerort/engine.h
 * @brief The ZeRO engine: partitioned parameters, gradients and optimizer state.
 *
 * ## Life cycle
 * ```
 * zrt_engine_create(ctx, &params, &engine)           collective
 * zrt_param_register(engine, "h0.attn.w", ...) x n   local, same sequence on every rank
 * zrt_engine_commit(engine)                          collective: layout, checks, buffers
 * zrt_param_set(engine, p, init_values, FP32) x n    local: identical values on every rank
 * loop:
 *   forward   stage 3: zrt_param_gather(p) ... zrt_param_release(p)
 *   backward  zrt_param_grad_data(p, &g); write g; zrt_param_grad_ready(p)   (any order)
 *   zrt_engine_step(engine, &report)                 collective
 * zrt_engine_destroy(engine)
 * ```
 *
 * ## Stages (the ZeRO paper's definitions)
 *  - 0: every rank keeps everything; gradients are all-reduced.
 *  - 1: the optimizer state (and fp32 master weights) is sharded; gradients are full-size
 *       and reduce-scattered; updated parameters are all-gathered.
 *  - 2: as 1, and gradients are reduce-scattered bucket by bucket during backward into
 *       each owner's shard; no full-size gradient buffer exists.
 *  - 3: as 2, and parameters are sharded too: zrt_param_gather assembles a parameter
 *       before use and zrt_param_release frees it.
 *
 * Per-rank model-state bytes for P parameters on N ranks (mixed precision, Adam): stage 0
 * 16P, stage 1 4P + 12P/N, stage 2 2P + 14P/N, stage 3 16P/N; with fp32 compute: stage 0
 * 16P, stage 1 8P + 8P/N, stage 2 4P + 12P/N, stage 3 16P/N. zrt_engine_memory reports
 * the bytes actually held, plus the bucket buffers.
 *
 * ## Memory space and streams
 * With memory_space ZRT_ENGINE_MEMORY_DEVICE (engine.memory_space = device) the engine
 * lives on the rank's GPU: the compute-dtype parameters, the gradients and every bucket
 * are device memory (zrt_param_data and zrt_param_grad_data return device pointers), and so are
 * the fp32 master weights and optimizer moments, updated by GPU kernels, unless
 * offload_optimizer keeps them in pinned host memory and updates them on the CPU
 * (ZeRO-Offload). Collectives on device memory use NCCL where it serves (one rank per
 * GPU) and go through pinned host memory otherwise (zrt-info says which). The default is
 * ZRT_ENGINE_MEMORY_HOST, so a program written for host memory runs unchanged;
 * memory.device.emulate emulates a device on machines without one.
 *
 * The program computes on its own stream (stream in the params, zrt_engine_set_stream; a
 * cudaStream_t, NULL for CUDA's default stream), and the engine orders its device work
 * with that stream as NCCL orders collectives with the stream they are given:
 *  - the buffer zrt_param_grad_data returns is zeroed (or holds earlier micro-steps' gradients)
 *    for the work the program enqueues on its stream after the call (zrt_param_grad_buffer's
 *    ADD buffers too);
 *  - zrt_param_grad_ready: the reduction of a bucket reads its gradients after all the work the
 *    program enqueued before the call that made the bucket complete;
 *  - zrt_param_gather returns once the gathered values are in device memory, so the
 *    program's later work reads them;
 *  - zrt_engine_step returns with the updated parameters ordered before the program's
 *    later work.
 * The host waits inside the engine only where it needs a result (the overflow check, the
 * gradient norm, the completion of a collective).
 *
 * ## Order
 * Buckets are fixed at commit, in reverse registration order (the order backward usually
 * produces gradients), identically on every rank. A bucket is reduced once all of its
 * gradients are ready and every earlier bucket has been reduced, so zrt_param_grad_ready may be
 * called in any order on any rank without deadlock or mismatch.
 */
#ifndef ZERORT_ENGINE_H
#define ZERORT_ENGINE_H

#include "zerort/context.h"
#include "zerort/defs.h"
#include "zerort/status.h"

ZRT_BEGIN_DECLS

/** @brief A ZeRO engine: one model's parameters, gradients and optimizer. */
typedef struct zrt_engine *zrt_engine_h;
/** @brief A registered parameter tensor of an engine. */
typedef struct zrt_param *zrt_param_h;

/** @brief Optimizers; each runs on the local shard only. */
typedef enum zrt_optimizer {
  ZRT_OPTIMIZER_ADAMW = 0, /**< Adam with decoupled weight decay (default) */
  ZRT_OPTIMIZER_ADAM = 1,  /**< Adam with L2 weight decay added to the gradient */
  ZRT_OPTIMIZER_SGD = 2,   /**< SGD with momentum and optional Nesterov */
  ZRT_OPTIMIZER_LAMB = 3,  /**< LAMB: Adam with a per-tensor trust ratio */
  /** Not a value: makes every int a valid value of the type (see defs.h). */
  ZRT_OPTIMIZER_FORCE_INT_ = -2147483647 - 1
} zrt_optimizer_t;

/** @brief Where an engine's buffers live (see "Memory space and streams" above). */
typedef enum zrt_engine_memory {
  ZRT_ENGINE_MEMORY_HOST = 0,   /**< host memory (the default) */
  ZRT_ENGINE_MEMORY_DEVICE = 1, /**< the rank's device; ZRT_ERR_NOT_SUPPORTED without one */
  ZRT_ENGINE_MEMORY_AUTO = 2,   /**< the device when every rank has one, else the host */
  /** Not a value: makes every int a valid value of the type (see defs.h). */
  ZRT_ENGINE_MEMORY_FORCE_INT_ = -2147483647 - 1
} zrt_engine_memory_t;

/** @brief How backward writes a gradient buffer from zrt_param_grad_buffer. */
typedef enum zrt_grad_write {
  /** The buffer holds zeros or the earlier micro-steps' sum: add the gradient to it. */
  ZRT_GRAD_WRITE_ADD = 0,
  /** The buffer's contents are undefined: write every element of the gradient. */
  ZRT_GRAD_WRITE_OVERWRITE = 1,
  /** Not a value: makes every int a valid value of the type (see defs.h). */
  ZRT_GRAD_WRITE_FORCE_INT_ = -2147483647 - 1
} zrt_grad_write_t;

/**
 * @name zrt_engine_params_field
 * Which fields of zrt_engine_params_t the caller set.
 * @{
 */
#define ZRT_ENGINE_PARAM_FIELD_STAGE ZRT_BIT(0)
#define ZRT_ENGINE_PARAM_FIELD_COMPUTE_DTYPE ZRT_BIT(1)
#define ZRT_ENGINE_PARAM_FIELD_OPTIMIZER ZRT_BIT(2)
#define ZRT_ENGINE_PARAM_FIELD_LR ZRT_BIT(3)
#define ZRT_ENGINE_PARAM_FIELD_BETAS ZRT_BIT(4)
#define ZRT_ENGINE_PARAM_FIELD_EPS ZRT_BIT(5)
#define ZRT_ENGINE_PARAM_FIELD_WEIGHT_DECAY ZRT_BIT(6)
#define ZRT_ENGINE_PARAM_FIELD_MOMENTUM ZRT_BIT(7)
#define ZRT_ENGINE_PARAM_FIELD_NESTEROV ZRT_BIT(8)
#define ZRT_ENGINE_PARAM_FIELD_REDUCE_BUCKET_BYTES ZRT_BIT(9)
#define ZRT_ENGINE_PARAM_FIELD_ALLGATHER_BUCKET_BYTES ZRT_BIT(10)
#define ZRT_ENGINE_PARAM_FIELD_OVERLAP ZRT_BIT(11)
#define ZRT_ENGINE_PARAM_FIELD_OFFLOAD_OPTIMIZER ZRT_BIT(12)
#define ZRT_ENGINE_PARAM_FIELD_GRADIENT_CLIPPING ZRT_BIT(13)
#define ZRT_ENGINE_PARAM_FIELD_GRADIENT_ACCUMULATION_STEPS ZRT_BIT(14)
#define ZRT_ENGINE_PARAM_FIELD_DETERMINISTIC ZRT_BIT(15)
#define ZRT_ENGINE_PARAM_FIELD_LOSS_SCALE ZRT_BIT(16)
#define ZRT_ENGINE_PARAM_FIELD_INITIAL_SCALE_POWER ZRT_BIT(17)
#define ZRT_ENGINE_PARAM_FIELD_LOSS_SCALE_WINDOW ZRT_BIT(18)
#define ZRT_ENGINE_PARAM_FIELD_HYSTERESIS ZRT_BIT(19)
#define ZRT_ENGINE_PARAM_FIELD_MIN_LOSS_SCALE ZRT_BIT(20)
#define ZRT_ENGINE_PARAM_FIELD_MAX_LIVE_PARAMETERS ZRT_BIT(21)
#define ZRT_ENGINE_PARAM_FIELD_MEMORY_SPACE ZRT_BIT(22)
#define ZRT_ENGINE_PARAM_FIELD_STREAM ZRT_BIT(23)
#define ZRT_ENGINE_PARAM_FIELD_SHARED_BUFFERS ZRT_BIT(24)
#define ZRT_ENGINE_PARAM_FIELD_SETTINGS ZRT_BIT(25)
/** every field of this header's version */
#define ZRT_ENGINE_PARAM_FIELD_ALL (ZRT_BIT(26) - 1)
/** @} */

/**
 * @brief Parameters of zrt_engine_create. Unset fields take the default shown, or the
 * configuration file's / environment's value (keys in docs/configuration.md; DeepSpeed's names such
 * as zero_optimization.stage are accepted in the JSON file).
 */
typedef struct zrt_engine_params {
  uint64_t field_mask;
  int stage;                     /**< 0, 1, 2 or 3; default 2 */
  zrt_dtype_t compute_dtype;     /**< parameters and gradients as the program sees them:
                                      fp32 (default), bf16 or fp16; master weights are fp32 */
  zrt_optimizer_t optimizer;     /**< default ZRT_OPTIMIZER_ADAMW */
  double lr;                     /**< learning rate; default 1e-3 (zrt_engine_set_lr changes it) */
  double beta1, beta2;           /**< Adam/LAMB moments; default 0.9, 0.999 */
  double eps;                    /**< default 1e-8 */
  double weight_decay;           /**< default 0 */
  double momentum;               /**< SGD; default 0 */
  int nesterov;                  /**< SGD; default 0 */
  size_t reduce_bucket_bytes;    /**< gradient bucket size; default 25 MiB */
  size_t allgather_bucket_bytes; /**< parameter all-gather bucket size; default 25 MiB */
  int overlap;                   /**< post a bucket's reduction as soon as it is full; default 1 */
  int offload_optimizer;         /**< optimizer state in pinned host memory, updated on the
                                      CPU (ZeRO-Offload); default 0 */
  double gradient_clipping;      /**< clip the global gradient norm to this; 0 = off (default) */
  int gradient_accumulation_steps;  /**< micro-steps per optimizer step; default 1 */
  int deterministic;                /**< reductions sum in rank order: bitwise-identical
                                         results across stages and runs; default 0 */
  double loss_scale;                /**< 0: dynamic loss scaling for fp16 (default), 1 for fp32
                                         and bf16; any other value: that static scale */
  int initial_scale_power;          /**< dynamic scaling starts at 2^this; default 16 */
  int loss_scale_window;            /**< steps without overflow before the scale doubles; 1000 */
  int hysteresis;                   /**< overflows tolerated before the scale halves; default 2 */
  double min_loss_scale;            /**< the scale never drops below this; default 1 */
  size_t max_live_parameters;       /**< stage 3: gathered elements kept resident after
                                         zrt_param_release (least recently used go first),
                                         0 .. 2^48 (0: free every released bucket); default
                                         1e9, DeepSpeed's stage3_max_live_parameters */
  zrt_engine_memory_t memory_space; /**< default ZRT_ENGINE_MEMORY_HOST (engine.memory_space) */
  void *stream;       /**< the program's CUDA stream (a cudaStream_t) with a device engine; default
                           NULL (CUDA's default stream); must be NULL for a host engine */
  int shared_buffers; /**< default 1: a host engine whose backend reads node-shared memory in
                           place (shm; hier inside a node) keeps its collectives' buffers in a
                           window the node's ranks map; 0: private (engine.shared_buffers) */
  /** Configuration keys of this engine as a JSON object, named as in the configuration file
   *  (dotted or nested): e.g. {"scheduler": {"type": "WarmupLR", "params":
   *  {"warmup_num_steps": 100}}, "train_micro_batch_size_per_gpu": 8}. They take the place
   *  of the file's values like the other fields (above the file, below the environment),
   *  and fill its "auto" values (a Hugging Face Trainer's ds_config.json). A key another
   *  field sets too, or a key of the context (comm.*, memory.*, ...), is
   *  ZRT_ERR_INVALID_ARGUMENT; an unknown key or a bad value ZRT_ERR_CONFIG. Read during
   *  zrt_engine_create only. Default NULL (no keys). */
  const char *settings;
} zrt_engine_params_t;

/**
 * @brief Create an engine over all ranks of @p context.
 * @param params may be NULL (defaults, configuration file, environment).
 * Collective, blocking. Thread-safe with respect to other engines; not to be called
 * concurrently with other calls on @p context's communicator.
 */
ZRT_API zrt_status_t zrt_engine_create(zrt_context_h context, const zrt_engine_params_t *params,
                                       zrt_engine_h *engine_p);

/**
 * @brief Destroy an engine and every buffer it holds (waiting for its collectives in
 * flight). Its parameter handles become stale. The engine is destroyed whatever the call
 * returns. In a broken context (see zrt_finalize) nothing waits for another rank and a
 * pending background save is stopped unpublished; when the ranks did not all come to
 * free the engine's shared resources within comm.timeout (another rank still steps, say),
 * the context becomes broken and the call returns ZRT_ERR_TIMEOUT naming them.
 * Collective, blocking. Not thread-safe with other calls on @p engine.
 */
ZRT_API zrt_status_t zrt_engine_destroy(zrt_engine_h engine);

/**
 * @brief Register a parameter tensor before zrt_engine_commit.
 * @param name  unique within the engine; checkpoints store it as the dataset /params/NAME, a
 *              path ('/' makes groups), so a name that would be stored inside another
 *              parameter or where another needs a group ("a" with "a/b"), or that has a
 *              component HDF5 drops (".", "/a", "a//b", "a/"), is ZRT_ERR_INVALID_ARGUMENT,
 *              naming both where there are two
 * @param dtype must equal the engine's compute dtype
 * @param ndim  1..8
 * @param shape ndim positive extents
 * Local, non-blocking; every rank must register the same tensors in the same order
 * (zrt_engine_commit checks). Not thread-safe with other calls on @p engine.
 */
ZRT_API zrt_status_t zrt_param_register(zrt_engine_h engine, const char *name, zrt_dtype_t dtype,
                                        int ndim, const int64_t *shape, zrt_param_h *param_p);

/**
 * @name zrt_param_info_field
 * Which fields of zrt_param_info_t to fill.
 * @{
 */
#define ZRT_PARAM_INFO_FIELD_NAME ZRT_BIT(0)
#define ZRT_PARAM_INFO_FIELD_DTYPE ZRT_BIT(1)
/** ndim, shape, numel */
#define ZRT_PARAM_INFO_FIELD_SHAPE ZRT_BIT(2)
#define ZRT_PARAM_INFO_FIELD_ALL (ZRT_BIT(3) - 1)
/** @} */

/** @brief What zrt_param_info reports about a parameter: the fields named in field_mask. */
typedef struct zrt_param_info {
  uint64_t field_mask; /**< set by the caller: the fields to fill (ZRT_PARAM_INFO_FIELD_*) */
  const char *name;    /**< valid while the engine lives */
  zrt_dtype_t dtype;
  int ndim;
  int64_t shape[8]; /**< the first ndim entries */
  int64_t numel;
} zrt_param_info_t;

/**
 * @brief Fill the fields of @p info_p named in info_p->field_mask (others are left as they
 * are). Unknown bits fail with ZRT_ERR_INVALID_ARGUMENT. Local, non-blocking; thread-safe
 * except against zrt_param_register on @p engine.
 */
ZRT_API zrt_status_t zrt_param_info(zrt_engine_h engine, zrt_param_h param,
                                    zrt_param_info_t *info_p);

/**
 * @brief Number of parameters registered so far. Local, non-blocking; thread-safe except
 * against zrt_param_register on @p engine.
 */
ZRT_API zrt_status_t zrt_engine_param_count(zrt_engine_h engine, int *count_p);

/**
 * @brief The parameter registered @p index -th (from 0). Local, non-blocking; thread-safe
 * except against zrt_param_register on @p engine.
 */
ZRT_API zrt_status_t zrt_engine_param_at(zrt_engine_h engine, int index, zrt_param_h *param_p);

/**
 * @brief Fix the layout: one flat, aligned, padded parameter buffer and its gradient
 * buckets, partitioned over the ranks; allocate every buffer; zero the parameters.
 * Fails with ZRT_ERR_MISMATCH on every rank if the registrations differ across ranks.
 * Collective, blocking. Not thread-safe with other calls on @p engine.
 */
ZRT_API zrt_status_t zrt_engine_commit(zrt_engine_h engine);

/**
 * @brief Set a parameter's full value (its master copy and, where this rank holds it, its
 * compute copy) from @p values of @p dtype (fp32 or the compute dtype). Every rank must
 * pass the same values. Local, blocking (it converts and copies). Not thread-safe with
 * other calls on @p engine.
 */
ZRT_API zrt_status_t zrt_param_set(zrt_engine_h engine, zrt_param_h param, const void *values,
                                   zrt_dtype_t dtype);

/**
 * @brief Read a parameter's full fp32 master value into @p values (as @p dtype).
 * Collective (stages 1-3 gather the shards), blocking. Not thread-safe with other calls on
 * @p engine.
 */
ZRT_API zrt_status_t zrt_param_get(zrt_engine_h engine, zrt_param_h param, void *values,
                                   zrt_dtype_t dtype);

/**
 * @brief The parameter's values in the compute dtype, for forward and backward.
 * Stages 0-2: valid after commit. Stage 3: valid between zrt_param_gather and
 * zrt_param_release (ZRT_ERR_INVALID_STATE otherwise). Local, non-blocking. Not thread-safe
 * with other calls on @p engine.
 */
ZRT_API zrt_status_t zrt_param_data(zrt_engine_h engine, zrt_param_h param, void **data_p);

/**
 * @brief Where backward writes this parameter's gradient (compute dtype, the parameter's
 * shape), valid until zrt_param_grad_ready(param). Ask for it right before writing: at stage 2
 * and 3 it lies in a bucket buffer and may block until a buffer is free. It holds zeros, or
 * the earlier micro-steps' sum; add the gradient to it (unless zrt_param_grad_buffer handed
 * it out to overwrite earlier in this micro-step: then it is that buffer, as it stands).
 * Local; blocking only while it waits for a buffer. Not thread-safe with other calls on
 * @p engine.
 */
ZRT_API zrt_status_t zrt_param_grad_data(zrt_engine_h engine, zrt_param_h param, void **data_p);

/**
 * @brief zrt_param_grad_data for a backward that can overwrite: the engine may hand out the
 * buffer without zeroing it first, and @p write_p says how this micro-step's gradient goes
 * into it. ZRT_GRAD_WRITE_OVERWRITE: its contents are undefined and the program writes
 * every element (a gemm with beta 0, a copy); ZRT_GRAD_WRITE_ADD: it holds zeros or the
 * earlier micro-steps' sum, as zrt_param_grad_data's does, and the program adds. At stages
 * 2 and 3 every micro-step writes a fresh bucket buffer, so the answer is OVERWRITE and the
 * engine skips zeroing it (a step's whole gradient volume); at stages 0 and 1 the gradient
 * accumulates in place and the answer is ADD. The first call for @p param in a micro-step
 * decides its mode: later calls, zrt_param_grad_data included, return the same buffer
 * unchanged. A parameter made ready without either call still reduces a zero gradient.
 * A program that leaves elements of an OVERWRITE buffer unwritten trains on whatever they
 * held. Local; blocking, thread safety and validity as zrt_param_grad_data.
 */
ZRT_API zrt_status_t zrt_param_grad_buffer(zrt_engine_h engine, zrt_param_h param, void **data_p,
                                           zrt_grad_write_t *write_p);

/**
 * @brief The gradient of @p param is complete. A bucket whose gradients are all ready is
 * reduced (asynchronously, with overlap on) in the fixed bucket order. Calling it twice
 * for a parameter in one micro-step is ZRT_ERR_INVALID_STATE. Local; it returns once the
 * reduction is posted, except that it waits for an earlier reduction when every landing
 * buffer is in use (stage 1, or accumulation at stages 2-3), and for this one without
 * overlap. Not thread-safe with other calls on @p engine.
 */
ZRT_API zrt_status_t zrt_param_grad_ready(zrt_engine_h engine, zrt_param_h param);

/**
 * @name zrt_step_report_field
 * Which fields of zrt_step_report_t to fill.
 * @{
 */
#define ZRT_STEP_REPORT_FIELD_APPLIED ZRT_BIT(0)
#define ZRT_STEP_REPORT_FIELD_SKIPPED ZRT_BIT(1)
#define ZRT_STEP_REPORT_FIELD_STEP ZRT_BIT(2)
#define ZRT_STEP_REPORT_FIELD_LOSS_SCALE ZRT_BIT(3)
#define ZRT_STEP_REPORT_FIELD_GRAD_NORM ZRT_BIT(4)
/** offload_copy_seconds, offload_exposed_seconds */
#define ZRT_STEP_REPORT_FIELD_OFFLOAD_TIMES ZRT_BIT(5)
#define ZRT_STEP_REPORT_FIELD_SKIPPED_STEPS ZRT_BIT(6)
/** comm_wait_seconds, comm_collectives, comm_reduce_scatter_bytes, comm_all_gather_bytes, *
 * comm_all_reduce_bytes */
#define ZRT_STEP_REPORT_FIELD_COMMUNICATION ZRT_BIT(7)
#define ZRT_STEP_REPORT_FIELD_LR ZRT_BIT(8)
/** offload_cpu_seconds, offload_cpu_exposed_seconds */
#define ZRT_STEP_REPORT_FIELD_OFFLOAD_CPU ZRT_BIT(9)
#define ZRT_STEP_REPORT_FIELD_ALL (ZRT_BIT(10) - 1)
/** @} */

/** @brief What zrt_engine_step reports: the fields named in field_mask. */
typedef struct zrt_step_report {
  uint64_t field_mask; /**< set by the caller: the fields to fill (ZRT_STEP_REPORT_FIELD_*) */
  int applied;         /**< 1 if the optimizer ran (last micro-step and no overflow) */
  int skipped;         /**< 1 if a non-finite gradient on any rank (an fp16 overflow, a NaN)
                            skipped the step on every rank */
  int64_t step;        /**< optimizer steps applied so far */
  double loss_scale;   /**< the scale to multiply the next loss by */
  double grad_norm;    /**< global L2 norm of the unscaled gradient, before clipping */
  /** ZeRO-Offload on the device (offload_optimizer with memory_space device; 0 otherwise):
   *  this rank's stream time on the copies between device and pinned host memory during
   *  the accumulation this call ends (gradient shards down, updated parameters up; 0 on
   *  the other micro-steps), and of that the time
   *  the host waited for them because nothing hid them (backward hides the gradients'
   *  copies, the update of the next range the parameters'). 1 - exposed / copy is the
   *  share hidden. */
  double offload_copy_seconds;
  double offload_exposed_seconds;
  /** Steps skipped so far because the global gradient norm was Inf or NaN (every dtype,
   *  with check_grad_overflow on, the default; fp16 overflows included). */
  int64_t skipped_steps;
  /** The engine's collectives since this rank's previous zrt_engine_step (so the
   *  micro-steps of an accumulation are each reported): the time this rank's thread was
   *  blocked waiting for them, in zrt_param_grad_data / zrt_param_grad_ready when every bucket
   * buffer was still being reduced, in zrt_param_gather (stage 3) and in this call (the last
   *  reductions, the all-gather of updated parameters); the gathers of zrt_param_get and
   *  of a checkpoint load in between count in the next report. A reduction that completed
   *  behind backward costs nothing here: this is the exposed communication, measured
   *  without synchronizing anything. The small agreements of a step (gradient norm,
   *  overflow) are not counted. */
  double comm_wait_seconds;
  int64_t comm_collectives; /**< posted in that time */
  /** Bytes of the vectors those collectives reduced or gathered (count times the element
   *  size, the message size of DeepSpeed's comms logger), by kind. */
  int64_t comm_reduce_scatter_bytes;
  int64_t comm_all_gather_bytes;
  int64_t comm_all_reduce_bytes;
  /** The learning rate of the update this call ran (or skipped); on the other micro-steps
   *  of an accumulation, the rate the next update will run with: the scheduler's (see
   *  zrt_engine_step) or the program's (zrt_engine_set_lr). */
  double lr;
  /** ZeRO-Offload on the device (0 otherwise): the CPU's time on this rank's optimizer
   *  update in the call that applied or skipped it, and of that the time the call waited
   *  for it. With engine.offload_step during_backward the CPU updates each bucket's shard
   *  as its gradient reaches the host, hidden behind the rest of backward; what is exposed
   *  is the update of the last buckets and, on a step that clipping or a non-finite
   *  gradient changed, the redo after backward. 1 - exposed / cpu is the share hidden. */
  double offload_cpu_seconds;
  double offload_cpu_exposed_seconds;
} zrt_step_report_t;

/**
 * @brief End a micro-step: wait for every bucket, and on the last micro-step of an
 * accumulation unscale, check for overflow (agreed across ranks), clip to the global norm,
 * run the optimizer on this rank's shard, and all-gather updated parameters (stages 1, 2).
 *
 * With a learning rate scheduler (scheduler.type WarmupLR, WarmupDecayLR or
 * WarmupCosineLR, from the configuration file or params->settings: DeepSpeed's schedulers
 * and formulas) the update runs at the scheduler's rate for the count of updates applied so
 * far (report's step, which checkpoints keep), and the scheduler moves on after each
 * applied update as DeepSpeed's does (a skipped one leaves it); the program does not set
 * the rate then (zrt_engine_set_lr is refused). Without one the rate is
 * optimizer.params.lr until zrt_engine_set_lr changes it.
 * Fails with ZRT_ERR_INVALID_STATE, naming the parameter, if a gradient was not made ready.
 * @param report_p may be NULL; else the fields named in report_p->field_mask are written
 * (unknown bits fail with ZRT_ERR_INVALID_ARGUMENT on every rank, before the step).
 * Collective, blocking. Not thread-safe with other calls on @p engine.
 */
ZRT_API zrt_status_t zrt_engine_step(zrt_engine_h engine, zrt_step_report_t *report_p);

/**
 * @brief Give @p param its own weight decay instead of the engine's (0 for biases and
 * normalization gains, as is usual). Any time; applies from the next step. Local,
 * non-blocking; every rank must set the same. Not thread-safe with other calls on @p engine.
 */
ZRT_API zrt_status_t zrt_param_set_weight_decay(zrt_engine_h engine, zrt_param_h param,
                                                double weight_decay);

/**
 * @brief Change the learning rate (the program's own schedule). Refused with
 * ZRT_ERR_INVALID_STATE, naming the scheduler and where it was set, while a scheduler
 * (scheduler.type) drives the rate: the program and the file would each believe their rate
 * is the one used. A program that sets its own rate while a file it reads may name a
 * scheduler sets {"scheduler": {"type": "none"}} in params->settings. Local, non-blocking;
 * every rank must set the same. Not thread-safe with other calls on @p engine.
 */
ZRT_API zrt_status_t zrt_engine_set_lr(zrt_engine_h engine, double lr);

/**
 * @brief The stream the program computes on from now on (a cudaStream_t, or NULL for
 * CUDA's default stream); the engine's device work is ordered with it (see "Memory space
 * and streams"). A stream of another device than the engine's, or a non-NULL stream for a
 * host engine or on the emulated device, is ZRT_ERR_INVALID_ARGUMENT. Local, non-blocking.
 * Not thread-safe with other calls on @p engine.
 */
ZRT_API zrt_status_t zrt_engine_set_stream(zrt_engine_h engine, void *stream);

/**
 * @brief The loss scale to apply to the next loss (1 without fp16). Local, non-blocking.
 * Not thread-safe with zrt_engine_step on @p engine.
 */
ZRT_API zrt_status_t zrt_engine_loss_scale(zrt_engine_h engine, double *scale_p);

/**
 * @brief Stage 3: assemble @p param's full values (and prefetch the next parameters in the
 * direction of the previous gathers). The unit gathered is the parameter's bucket; released
 * buckets stay resident up to max_live_parameters, so a gather may need no communication.
 * Other stages: a no-op. Collective: every rank must gather and release the same parameters
 * in the same order. Ranks that gather different parameters fail with ZRT_ERR_MISMATCH on
 * every rank (with comm.check_args, the default: the check compares which bucket each rank
 * gathers, at which step), the message naming what this rank gathered and the range the
 * ranks asked for; where the gather needs no communication on some rank (its group still
 * resident there) the others' gather ends with ZRT_ERR_TIMEOUT instead. Blocking. Not
 * thread-safe with other calls on @p engine.
 */
ZRT_API zrt_status_t zrt_param_gather(zrt_engine_h engine, zrt_param_h param);

/**
 * @brief Stage 3: release the gathered copy of @p param; its group stays resident until
 * max_live_parameters forces it out (least recently used first). Other stages: a no-op.
 * Local, non-blocking. Not thread-safe with other calls on @p engine.
 */
ZRT_API zrt_status_t zrt_param_release(zrt_engine_h engine, zrt_param_h param);

/**
 * @name zrt_memory_report_field
 * Which fields of zrt_memory_report_t to fill.
 * @{
 */
#define ZRT_MEMORY_REPORT_FIELD_PARAMETER_COUNT ZRT_BIT(0)
#define ZRT_MEMORY_REPORT_FIELD_PARAMETERS ZRT_BIT(1)
#define ZRT_MEMORY_REPORT_FIELD_GRADIENTS ZRT_BIT(2)
#define ZRT_MEMORY_REPORT_FIELD_MASTER_WEIGHTS ZRT_BIT(3)
#define ZRT_MEMORY_REPORT_FIELD_OPTIMIZER_STATE ZRT_BIT(4)
#define ZRT_MEMORY_REPORT_FIELD_BUCKETS ZRT_BIT(5)
#define ZRT_MEMORY_REPORT_FIELD_TOTAL ZRT_BIT(6)
/** gather_fetches, gather_evictions */
#define ZRT_MEMORY_REPORT_FIELD_GATHER ZRT_BIT(7)
/** device_bytes, host_bytes */
#define ZRT_MEMORY_REPORT_FIELD_PLACEMENT ZRT_BIT(8)
/** node_shared_bytes, node_shared_ranks */
#define ZRT_MEMORY_REPORT_FIELD_SHARED ZRT_BIT(9)
#define ZRT_MEMORY_REPORT_FIELD_ALL (ZRT_BIT(10) - 1)
/** @} */

/** @brief Bytes this rank holds, by kind: the fields named in field_mask. */
typedef struct zrt_memory_report {
  uint64_t field_mask;     /**< set by the caller: the fields to fill (ZRT_MEMORY_REPORT_FIELD_*) */
  int64_t parameter_count; /**< P: elements of all registered parameters, unpadded */
  int64_t parameters;      /**< compute-dtype parameter bytes held */
  int64_t gradients;       /**< gradient bytes held (full buffer or shard) */
  int64_t master_weights;  /**< fp32 master-weight bytes (0 when compute is fp32) */
  int64_t optimizer_state; /**< optimizer moments bytes */
  int64_t buckets;         /**< communication bucket bytes */
  int64_t total;           /**< the sum of the bytes above */
  uint64_t gather_fetches; /**< stage 3: parameter groups all-gathered so far (prefetches
                                included); 0 at other stages */
  uint64_t gather_evictions; /**< stage 3: released groups freed so far because the resident
                                  ones exceeded max_live_parameters; 0 at other stages */
  int64_t device_bytes;      /**< of total, the bytes in device memory */
  int64_t host_bytes;        /**< of total, the bytes in host memory (pinned or not) */
  int64_t node_shared_bytes; /**< of host_bytes, the bytes in the engine's node-shared window
                                  (engine.shared_buffers), which its collectives read in place */
  int32_t node_shared_ranks; /**< the ranks that map that window (this rank's node); 0: none */
} zrt_memory_report_t;

/**
 * @brief This rank's memory report: the fields named in report_p->field_mask (unknown bits
 * fail with ZRT_ERR_INVALID_ARGUMENT). Local, non-blocking. Not thread-safe with other calls
 * on @p engine.
 */
ZRT_API zrt_status_t zrt_engine_memory(zrt_engine_h engine, zrt_memory_report_t *report_p);

/**
 * @brief Describe the engine as JSON: what it resolved from its params, the configuration
 * file and the environment (stage, compute dtype, optimizer and its hyperparameters,
 * bucket sizes in bytes, memory space, deterministic, check_grad_overflow,
 * gradient_accumulation_steps, DeepSpeed's train_batch_size and
 * train_micro_batch_size_per_gpu (0 when no batch size was given), the learning rate
 * "scheduler" with the values it runs with, ...) and, under "settings", every value with its
 * source ("auto" where nothing filled it). The environment wins over params, so this is
 * what a program should print rather than what it asked for.
 *
 * snprintf-like, as zrt_context_describe. Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_engine_describe(zrt_engine_h engine, char *buf, size_t size,
                                         size_t *length_p);

/**
 * @name API 2 names
 * Before API 3 gave them the zrt_param_ prefix; kept for API 3 only (deprecated).
 * @{
 */
/** @brief Deprecated: zrt_param_grad_data. */
static inline ZRT_DEPRECATED("zrt_param_grad_data") zrt_status_t
    zrt_grad_data(zrt_engine_h engine, zrt_param_h param, void **data_p) {
  return zrt_param_grad_data(engine, param, data_p);
}
/** @brief Deprecated: zrt_param_grad_ready. */
static inline ZRT_DEPRECATED("zrt_param_grad_ready") zrt_status_t
    zrt_grad_ready(zrt_engine_h engine, zrt_param_h param) {
  return zrt_param_grad_ready(engine, param);
}
/** @} */

ZRT_END_DECLS

#endif /* ZERORT_ENGINE_H */
