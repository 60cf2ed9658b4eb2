/**
 * @file zerort/context.h
 * @brief Initialization, finalization and the queries of a zerort context.
 *
 * A context binds zerort to one MPI communicator. It resolves the configuration, loads
 * the node topology with hwloc, places the rank, and owns a communicator over the same
 * ranks (zrt_context_comm). Several contexts may live in one process.
 */
#ifndef ZERORT_CONTEXT_H
#define ZERORT_CONTEXT_H

#include <mpi.h>

#include "zerort/defs.h"
#include "zerort/status.h"
#include "zerort/version.h"

ZRT_BEGIN_DECLS

/** @brief Log levels, from the most quiet. */
typedef enum zrt_log_level {
  ZRT_LOG_ERROR = 0,
  ZRT_LOG_WARN = 1,
  ZRT_LOG_INFO = 2,
  ZRT_LOG_DEBUG = 3,
  ZRT_LOG_TRACE = 4,
  /** Not a value: makes every int a valid value of the type, so a bad value passed
      from C is an error zerort reports, not undefined behaviour in C++. */
  ZRT_LOG_FORCE_INT_ = -2147483647 - 1
} zrt_log_level_t;

/** @brief How zerort places the calling process on the node's cores. */
typedef enum zrt_bind {
  ZRT_BIND_AUTO = 0, /**< bind to this rank's share of the cores unless already bound */
  ZRT_BIND_NONE = 1, /**< never change the binding */
  ZRT_BIND_CORE = 2 /**< always bind to this rank's share of the cores */,
  /** Not a value: makes every int a valid value of the type, so a bad value passed
      from C is an error zerort reports, not undefined behaviour in C++. */
  ZRT_BIND_FORCE_INT_ = -2147483647 - 1
} zrt_bind_t;

/** @brief Who bound the process, as reported by zrt_context_query. */
typedef enum zrt_bound_by {
  ZRT_BOUND_BY_NONE = 0,     /**< the process may run on every core of the node */
  ZRT_BOUND_BY_LAUNCHER = 1, /**< mpirun, srun or the user bound it before zrt_init */
  ZRT_BOUND_BY_ZERORT = 2    /**< zrt_init bound it */
} zrt_bound_by_t;

/**
 * @name zrt_init_params_field
 * Which fields of zrt_init_params_t the caller set.
 * @{
 */
#define ZRT_INIT_PARAM_FIELD_LOG_LEVEL ZRT_BIT(0)
#define ZRT_INIT_PARAM_FIELD_CONFIG_FILE ZRT_BIT(1)
#define ZRT_INIT_PARAM_FIELD_BIND ZRT_BIT(2)
#define ZRT_INIT_PARAM_FIELD_RANKS_PER_NODE ZRT_BIT(3)
/** every field of this header's version */
#define ZRT_INIT_PARAM_FIELD_ALL (ZRT_BIT(4) - 1)
/** @} */

/**
 * @brief Parameters of zrt_init. Set field_mask to the fields you fill; the others take
 * the defaults documented here (or the configuration file and ZRT_* environment).
 * Fields are only ever appended.
 */
typedef struct zrt_init_params {
  uint64_t field_mask;
  zrt_log_level_t log_level; /**< default ZRT_LOG_WARN (key log_level) */
  const char *config_file;   /**< JSON configuration file; default none (key config_file) */
  zrt_bind_t bind;           /**< default ZRT_BIND_AUTO (key bind) */
  int ranks_per_node;        /**< 0: detect nodes with MPI_COMM_TYPE_SHARED (default);
                                  n > 0: treat each n consecutive ranks as one node */
} zrt_init_params_t;

/**
 * @brief Initialize zerort on the ranks of @p comm; do not call directly, use zrt_init.
 * @param api_version ZRT_API_VERSION of the header the caller compiled against.
 * Collective over @p comm, blocking. Thread-safe as zrt_init.
 */
ZRT_API zrt_status_t zrt_init_versioned(uint32_t api_version, MPI_Comm comm,
                                        const zrt_init_params_t *params, zrt_context_h *context_p);

/**
 * @brief Initialize zerort on the ranks of @p comm.
 *
 * If MPI is not initialized, zrt_init initializes it (MPI_THREAD_MULTIPLE requested) and
 * the last zrt_finalize finalizes it; MPI that the caller initialized is left alone.
 * @p comm is duplicated, so zerort's traffic never matches the caller's.
 *
 * Configuration precedence, from lowest to highest: built-in defaults, the JSON file
 * (params->config_file, else $ZRT_CONFIG), the fields set in @p params, and ZRT_*
 * environment variables. An unknown key or a bad value fails with ZRT_ERR_CONFIG and a
 * message naming the key and the accepted values.
 *
 * Every rank of @p comm must call it: one that does not arrive within comm.timeout
 * (ZRT_COMM_TIMEOUT; a rank that died or stopped before it, say) fails the others with
 * ZRT_ERR_TIMEOUT. The ranks are then out of step: end the job with MPI_Abort, since
 * MPI_Finalize would wait for the missing rank.
 *
 * @param comm   an intra-communicator; MPI_COMM_WORLD may be passed before MPI_Init.
 * @param params may be NULL (all defaults).
 * @param[out] context_p the new context; written only on success.
 * Collective over @p comm, blocking. Thread-safe with respect to other contexts.
 */
static inline zrt_status_t zrt_init(MPI_Comm comm, const zrt_init_params_t *params,
                                    zrt_context_h *context_p) {
  return zrt_init_versioned((uint32_t)ZRT_API_VERSION, comm, params, context_p);
}

/**
 * @brief zrt_init for Fortran: @p comm is a Fortran handle (an mpi_f08 type(MPI_Comm)'s
 * MPI_VAL, or a `use mpi` integer). Used by the zerort Fortran module.
 * Collective over @p comm, blocking. Thread-safe as zrt_init.
 */
ZRT_API zrt_status_t zrt_init_fortran(uint32_t api_version, MPI_Fint comm,
                                      const zrt_init_params_t *params, zrt_context_h *context_p);

/**
 * @brief Destroy a context and every communicator it created.
 *
 * Engines still alive are destroyed as zrt_engine_destroy does (a background save still
 * writing is published first), then communicators, pools and offload engines; their
 * handles are stale afterwards (ZRT_ERR_INVALID_HANDLE). Fails with ZRT_ERR_INVALID_STATE,
 * destroying nothing, while requests are in flight, naming how many on which communicator.
 * Finalizes MPI if zrt_init initialized it and this was the last such context.
 * A broken context (an agreement or collective of it timed out, or MPI failed inside one:
 * the ranks are out of step) is released without waiting for any other rank, and the call
 * then fails with that status (ZRT_ERR_TIMEOUT) and the first verdict: MPI_Finalize would
 * wait for the stopped or hung rank for ever, so end the job with MPI_Abort (MPI that
 * zrt_init initialized is not finalized then).
 * After it, the handle is stale: calls with it fail with ZRT_ERR_INVALID_HANDLE.
 * Collective over the context's ranks, blocking (local once the context is broken). Not
 * thread-safe for the same context.
 */
ZRT_API zrt_status_t zrt_finalize(zrt_context_h context);

/**
 * @name zrt_context_attr_field
 * Which fields of zrt_context_attr_t to fill.
 * @{
 */
#define ZRT_CONTEXT_ATTR_FIELD_RANK ZRT_BIT(0)
#define ZRT_CONTEXT_ATTR_FIELD_SIZE ZRT_BIT(1)
/** node_id, node_count */
#define ZRT_CONTEXT_ATTR_FIELD_NODE ZRT_BIT(2)
/** local_rank, local_size */
#define ZRT_CONTEXT_ATTR_FIELD_LOCAL ZRT_BIT(3)
/** bound_by, bound_pus, numa_node */
#define ZRT_CONTEXT_ATTR_FIELD_BINDING ZRT_BIT(4)
/** gpu_count, gpu, nic_count */
#define ZRT_CONTEXT_ATTR_FIELD_DEVICES ZRT_BIT(5)
#define ZRT_CONTEXT_ATTR_FIELD_LOG_LEVEL ZRT_BIT(6)
/** every field of this header's version */
#define ZRT_CONTEXT_ATTR_FIELD_ALL (ZRT_BIT(7) - 1)
/** @} */

/** @brief Attributes of a context; zrt_context_query fills the fields named in field_mask. */
typedef struct zrt_context_attr {
  uint64_t field_mask;
  int rank;       /**< rank in the context's communicator */
  int size;       /**< number of ranks */
  int node_id;    /**< 0..node_count-1, ordered by the lowest rank on each node */
  int node_count; /**< number of nodes */
  int local_rank; /**< rank among the ranks of this node */
  int local_size; /**< number of ranks on this node */
  zrt_bound_by_t bound_by;
  int bound_pus; /**< processing units this process may run on */
  int numa_node; /**< the NUMA node the binding lies in, -1 if several or unknown */
  int gpu_count; /**< GPUs on this node (hwloc PCI discovery) */
  int gpu;       /**< index of the GPU nearest this rank, -1 if none */
  int nic_count; /**< network interfaces on this node */
  zrt_log_level_t log_level;
} zrt_context_attr_t;

/**
 * @brief Fill the fields of @p attr named in attr->field_mask; the others are left as they
 * are. Unknown bits fail with ZRT_ERR_INVALID_ARGUMENT. Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_context_query(zrt_context_h context, zrt_context_attr_t *attr_p);

/**
 * @brief Describe the context as JSON: version, build features, the configuration with
 * the source of each value, the topology and placement of this rank, and the backends.
 *
 * Works like snprintf: writes at most @p size bytes including the terminating NUL into
 * @p buf (which may be NULL when @p size is 0) and stores the full length, without the
 * NUL, in @p length_p. Call it with size 0 to learn the length.
 * Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_context_describe(zrt_context_h context, char *buf, size_t size,
                                          size_t *length_p);

/**
 * @brief The communicator over all ranks of the context, owned by the context (do not
 * destroy it). Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_context_comm(zrt_context_h context, zrt_comm_h *comm_p);

/**
 * @brief The version of the library actually loaded (which may differ from the header).
 * Any pointer may be NULL. Local, non-blocking, thread-safe; needs no context.
 */
ZRT_API zrt_status_t zrt_get_version(unsigned *major_p, unsigned *minor_p, unsigned *patch_p,
                                     uint32_t *api_version_p);

/**
 * @brief A byte count as zerort writes it in messages and reports: binary units with
 * three significant digits ("1.5 GiB", "64 MiB", "1020 KiB", "17 B"). snprintf-like, as
 * zrt_context_describe; 16 bytes always suffice. Local, non-blocking, thread-safe; needs no
 * context.
 */
ZRT_API zrt_status_t zrt_format_bytes(uint64_t bytes, char *buf, size_t size, size_t *length_p);

/**
 * @brief Every configuration key as JSON: name, environment variable, type, accepted
 * values, default and documentation. snprintf-like, as zrt_context_describe.
 * Local, non-blocking, thread-safe; needs no context.
 */
ZRT_API zrt_status_t zrt_config_schema(char *buf, size_t size, size_t *length_p);

ZRT_END_DECLS

#endif /* ZERORT_CONTEXT_H */
