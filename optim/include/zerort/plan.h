/**
 * @file zerort/plan.h
 * @brief An engine planned, not made: the memory a rank of it would hold, computed by the
 * code that lays engines out, with no MPI, no allocation and no GPU.
 *
 * ```
 * zrt_plan_create(&engine_params, &machine, &plan)     local
 * zrt_plan_add_param(plan, "h0.attn.w", 2, shape) x n  local, the engine's registration order
 * zrt_plan_memory(plan, &report)                       local
 * zrt_plan_destroy(plan)
 * ```
 * The report is zrt_engine_memory's on any rank of such an engine right after
 * zrt_engine_commit, to the byte: parameters, gradients, master weights, optimizer state,
 * the bucket buffers, where they live (device, host, the node-shared window). The engine's
 * params are resolved as zrt_engine_create resolves them, over the defaults and the
 * machine's configuration file (not this process's environment: a plan is usually for
 * another machine). Stage 3's gathered parameters come and go with the program's gathers
 * and are not part of a commit's report: zrt_plan_gathered_bytes bounds them.
 */
#ifndef ZERORT_PLAN_H
#define ZERORT_PLAN_H

#include "zerort/defs.h"
#include "zerort/engine.h"
#include "zerort/status.h"

ZRT_BEGIN_DECLS

/**
 * @name zrt_plan_params_field
 * Which fields of zrt_plan_params_t the caller set.
 * @{
 */
#define ZRT_PLAN_PARAM_FIELD_NRANKS ZRT_BIT(0)
#define ZRT_PLAN_PARAM_FIELD_RANKS_PER_NODE ZRT_BIT(1)
#define ZRT_PLAN_PARAM_FIELD_DEVICE ZRT_BIT(2)
#define ZRT_PLAN_PARAM_FIELD_SHARED_WINDOW ZRT_BIT(3)
#define ZRT_PLAN_PARAM_FIELD_CONFIG_FILE ZRT_BIT(4)
/** every field of this header's version */
#define ZRT_PLAN_PARAM_FIELD_ALL (ZRT_BIT(5) - 1)
/** @} */

/** @brief The machine an engine is planned for. */
typedef struct zrt_plan_params {
  uint64_t field_mask;
  int nranks;              /**< ranks the engine spans; default 1 */
  int ranks_per_node;      /**< of them, ranks on one node; default nranks */
  int device;              /**< 1: each rank has a GPU (engine.memory_space = auto goes to
                                it); default 0 */
  int shared_window;       /**< 1: the backend maps node-shared windows (shm, or hier inside a
                                node), where engine.shared_buffers puts the collective buffers;
                                0: mpi, ucx, nccl; default 1 */
  const char *config_file; /**< the job's JSON configuration; default none */
} zrt_plan_params_t;

/** @brief A planned engine. */
typedef struct zrt_plan *zrt_plan_h;

/**
 * @brief Plan an engine made with @p engine_params (NULL: the defaults) on @p machine (NULL:
 * one rank). Bad params or a machine that is not one (0 ranks, more ranks per node than
 * ranks) fail with ZRT_ERR_INVALID_ARGUMENT or ZRT_ERR_CONFIG naming the field. Local,
 * blocking; needs neither MPI nor zrt_init. Thread-safe.
 */
ZRT_API zrt_status_t zrt_plan_create(const zrt_engine_params_t *engine_params,
                                     const zrt_plan_params_t *machine, zrt_plan_h *plan_p);

/** @brief Free the plan. Local. Not thread-safe with other calls on @p plan. */
ZRT_API zrt_status_t zrt_plan_destroy(zrt_plan_h plan);

/**
 * @brief Add a parameter, as zrt_param_register would register it (in the compute dtype),
 * with the same checks: a duplicate name, ndim outside 1..8 or an extent below 1 fails
 * naming the parameter. Local. Not thread-safe with other calls on @p plan.
 */
ZRT_API zrt_status_t zrt_plan_add_param(zrt_plan_h plan, const char *name, int ndim,
                                        const int64_t *shape);

/**
 * @brief The memory report of a rank of the planned engine right after zrt_engine_commit:
 * the fields named in report_p->field_mask, as zrt_engine_memory fills them (gather counts
 * are 0). ZRT_ERR_INVALID_STATE when no parameter was added. Local. Not thread-safe with
 * other calls on @p plan.
 */
ZRT_API zrt_status_t zrt_plan_memory(zrt_plan_h plan, zrt_memory_report_t *report_p);

/**
 * @brief Stage 3: *bytes_p bounds the gathered-parameter buffers a rank holds at once while
 * the program holds a group or two gathered at a time: the groups kept within
 * max_live_parameters, the one in use and the one prefetched (each buffer at least the
 * largest single-bucket group), and the two freed buffers kept for reuse; 0 at stages
 * 0-2. Local. Not thread-safe with other calls on @p plan.
 */
ZRT_API zrt_status_t zrt_plan_gathered_bytes(zrt_plan_h plan, int64_t *bytes_p);

/**
 * @name zrt_plan_comm_field
 * Which fields of zrt_plan_comm_t to fill.
 * @{
 */
/** reduce_scatter_calls, all_gather_calls, all_reduce_calls */
#define ZRT_PLAN_COMM_FIELD_CALLS ZRT_BIT(0)
/** reduce_scatter_bytes, all_gather_bytes, all_reduce_bytes */
#define ZRT_PLAN_COMM_FIELD_BYTES ZRT_BIT(1)
#define ZRT_PLAN_COMM_FIELD_ALL (ZRT_BIT(2) - 1)
/** @} */

/** @brief The collectives of one optimizer step (one micro-step), by kind. */
typedef struct zrt_plan_comm {
  uint64_t field_mask;          /**< set by the caller: the fields to fill */
  int64_t reduce_scatter_calls; /**< collectives posted: one per bucket and pass */
  int64_t all_gather_calls;
  int64_t all_reduce_calls;
  int64_t reduce_scatter_bytes; /**< bytes as zrt_step_report_t's comm_*_bytes count them:
                                     each bucket's whole padded length */
  int64_t all_gather_bytes;
  int64_t all_reduce_bytes;
} zrt_plan_comm_t;

/**
 * @brief The collectives a rank of the planned engine posts in one optimizer step without
 * gradient accumulation: stage 0 all-reduces the gradients; stages 1 and 2 reduce-scatter
 * them and all-gather the updated parameters; stage 3 reduce-scatters them and gathers
 * each group for use, once while the parameters fit max_live_parameters, else counted twice
 * (at most: the groups the gatherer kept are not gathered again in backward). On one rank
 * too, where they are copies. Local. Not thread-safe with other calls
 * on @p plan.
 */
ZRT_API zrt_status_t zrt_plan_comm(zrt_plan_h plan, zrt_plan_comm_t *comm_p);

ZRT_END_DECLS

#endif /* ZERORT_PLAN_H */
