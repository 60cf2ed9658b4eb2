/**
 * @file zerort/comm.h
 * @brief Communicators and asynchronous collectives on host buffers.
 *
 * ## Partitioning and padding
 * zerort partitions a flat buffer of @c count elements over @c n ranks in contiguous
 * shards of @c shard = ceil(count / n) elements: rank r owns elements
 * [r*shard, min((r+1)*shard, count)). The last ranks' shards may be short or empty when
 * n does not divide count. zrt_shard_range() computes this; every collective below that
 * takes a total count uses it:
 *  - reduce-scatter reads @c count elements and writes @c shard elements: the rank's
 *    reduced elements, followed by zeros in the padding;
 *  - all-gather reads the rank's own elements (its valid length, padding not read) and
 *    writes @c count elements.
 *
 * ## Requests
 * zrt_comm_*_post starts an operation and returns a request (zerort/request.h):
 * zrt_request_test advances it and returns ZRT_SUCCESS once done, ZRT_IN_PROGRESS before;
 * zrt_request_wait blocks until it is done; zrt_request_free releases it. Buffers must stay
 * untouched until it is done.
 * Operations on one communicator must be posted in the same order on every rank.
 *
 * ## Deterministic mode
 * With deterministic set (zrt_comm_params_t, or the comm.deterministic key), reduce-scatter
 * and all-reduce add the ranks' contributions in rank order 0, 1, ..., n-1, in fp32 for
 * bf16 and fp16 (fp64 for fp64), and round once. Results are then bitwise identical run
 * after run, across backends, and between an all-reduce and a reduce-scatter plus
 * all-gather of the same data. Without it, backends add in whatever order is fastest
 * (and bf16/fp16 round after each addition).
 *
 * ## Backends
 * Six backends: mpi, shm, ucx, hier, nccl and staged. The registry picks one per
 * collective, the same on every rank: nccl for CUDA device memory (staged, through pinned
 * host memory and a host backend, where NCCL cannot serve it), shm for host memory on one
 * node, hier (shm inside nodes, then ucx or mpi between them) across nodes, mpi for small
 * buffers across nodes. comm.backend
 * (ZRT_COMM_BACKEND) or zrt_comm_params_t names one instead; a buffer it cannot serve is
 * an error (ZRT_ERR_NOT_SUPPORTED) that names both. zrt_comm_backend() reports the choice
 * for large host buffers. On CUDA device memory a collective starts after the work the
 * program has already put on CUDA's (legacy) default stream, as cudaMemcpy does, and its
 * result is in place when a blocking call returns.
 *
 * ## Watchdog
 * With a timeout (comm.timeout, ZRT_COMM_TIMEOUT, or the params' timeout), a collective
 * that has not completed that many seconds after it was posted fails with
 * ZRT_ERR_TIMEOUT on every rank, with a message naming the operation, its sequence number,
 * its size and the ranks that did not arrive. The communicator is then unusable: every
 * later post on it fails the same way; destroy it.
 *
 * ## Argument checks
 * With the configuration key comm.check_args (ZRT_COMM_CHECK_ARGS, on by default) every
 * collective first agrees on its kind, count, dtype, op and root across the ranks, so a
 * rank that passes a different count fails with ZRT_ERR_MISMATCH on every rank instead of
 * corrupting memory or hanging. The check costs one small all-reduce per collective.
 */
#ifndef ZERORT_COMM_H
#define ZERORT_COMM_H

#include <mpi.h>

#include "zerort/defs.h"
#include "zerort/request.h"
#include "zerort/status.h"

ZRT_BEGIN_DECLS

/**
 * @name zrt_comm_params_field
 * Which fields of zrt_comm_params_t the caller set.
 * @{
 */
#define ZRT_COMM_PARAM_FIELD_BACKEND ZRT_BIT(0)
#define ZRT_COMM_PARAM_FIELD_DETERMINISTIC ZRT_BIT(1)
#define ZRT_COMM_PARAM_FIELD_TIMEOUT ZRT_BIT(2)
/** every field of this header's version */
#define ZRT_COMM_PARAM_FIELD_ALL (ZRT_BIT(3) - 1)
/** @} */

/** @brief Parameters of zrt_comm_create. */
typedef struct zrt_comm_params {
  uint64_t field_mask;
  const char *backend; /**< "auto" (default: the registry chooses per collective) or one
                            of "mpi", "shm", "ucx", "hier", "nccl" (as built); default: the
                            comm.backend configuration key */
  int deterministic;   /**< 1: reductions sum in rank order (see "Deterministic mode");
                            default: the comm.deterministic configuration key (off) */
  double timeout;      /**< seconds a collective may take before the watchdog fails it on
                            every rank (see "Watchdog"); 0: no watchdog; default: the
                            comm.timeout configuration key */
} zrt_comm_params_t;

/**
 * @brief Create a communicator over the ranks of @p mpi_comm (which is duplicated).
 * @param params may be NULL.
 * Collective over @p mpi_comm, blocking. Thread-safe as MPI_Comm_dup is: with
 * MPI_THREAD_MULTIPLE, creations over different MPI communicators may run at once;
 * creations over the same one must be made in the same order on every rank.
 */
ZRT_API zrt_status_t zrt_comm_create(zrt_context_h context, MPI_Comm mpi_comm,
                                     const zrt_comm_params_t *params, zrt_comm_h *comm_p);

/**
 * @brief zrt_comm_create for Fortran: @p mpi_comm is a Fortran handle (an mpi_f08
 * type(MPI_Comm)'s MPI_VAL, or a `use mpi` integer). Used by the zerort Fortran module.
 * Collective over @p mpi_comm, blocking. Thread-safe as zrt_comm_create.
 */
ZRT_API zrt_status_t zrt_comm_create_fortran(zrt_context_h context, MPI_Fint mpi_comm,
                                             const zrt_comm_params_t *params, zrt_comm_h *comm_p);

/**
 * @brief Destroy a communicator made by zrt_comm_create. Fails with ZRT_ERR_INVALID_STATE,
 * destroying nothing, while requests on it are in flight. The communicator returned by
 * zrt_context_comm cannot be destroyed (ZRT_ERR_INVALID_ARGUMENT).
 * Collective, blocking. Not thread-safe with other calls on @p comm.
 */
ZRT_API zrt_status_t zrt_comm_destroy(zrt_comm_h comm);

/** @brief Rank of the caller in @p comm. Local, non-blocking, thread-safe. */
ZRT_API zrt_status_t zrt_comm_rank(zrt_comm_h comm, int *rank_p);
/** @brief Number of ranks in @p comm. Local, non-blocking, thread-safe. */
ZRT_API zrt_status_t zrt_comm_size(zrt_comm_h comm, int *size_p);
/**
 * @brief Name of the backend serving @p comm ("mpi", ...). The string is static.
 * Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_comm_backend(zrt_comm_h comm, const char **name_p);

/**
 * @brief Agree on a status: every rank passes its own, every rank gets the status of the
 * lowest-numbered failed rank (or ZRT_SUCCESS when all succeeded), and on a failure the
 * calling thread's last error message becomes "rank R: <R's message>" on every rank.
 * ZRT_IN_PROGRESS counts as success.
 * @param[out] failed_rank_p the lowest failed rank, -1 if none; may be NULL.
 * @return the agreed status; ZRT_ERR_MPI if the agreement itself failed.
 * Collective, blocking. Not thread-safe with other calls on @p comm (it runs an MPI
 * collective on the communicator's MPI communicator).
 */
ZRT_API zrt_status_t zrt_comm_agree_status(zrt_comm_h comm, zrt_status_t local_status,
                                           int *failed_rank_p);

/**
 * @brief The shard of a flat buffer of @p count elements that @p rank of @p nranks owns
 * (see "Partitioning and padding" above). Any output may be NULL.
 * @param[out] offset_p first element of the shard (r * shard, may exceed count)
 * @param[out] length_p valid elements in the shard (0 .. shard)
 * @param[out] shard_p  padded shard size ceil(count / nranks), equal on every rank
 * Local, non-blocking, thread-safe; needs no communicator.
 */
ZRT_API zrt_status_t zrt_shard_range(size_t count, int nranks, int rank, size_t *offset_p,
                                     size_t *length_p, size_t *shard_p);

/**
 * @brief Allocate @p bytes (> 0; may differ across ranks) of host memory for collectives on
 * @p comm. Where the backend serves the ranks of a node through shared memory (shm, and
 * hier inside each node), the memory is mapped into every rank of the node, and a
 * collective of comm.shm.direct_bytes and more whose buffers all come from here reads the
 * peers' buffers in place: a reduce-scatter sums straight from them (one pass over the
 * data instead of a copy and a pass). Elsewhere it is private memory, and collectives run
 * as on any other buffer. Any part of the buffer may be passed to a collective.
 * The memory is page-aligned and zeroed. It stays valid until zrt_comm_mem_free or the
 * destruction of @p comm.
 * Errors: ZRT_ERR_INVALID_ARGUMENT (bytes 0), ZRT_ERR_OUT_OF_MEMORY (more than the node
 * has); they occur on every rank together.
 * Collective over @p comm (every rank calls it, in the same order as the other
 * allocations and frees), blocking; collectives in flight on @p comm keep progressing
 * while it waits for the other ranks. Thread-safe with respect to collectives on @p comm;
 * not to be called concurrently with other allocations or frees on @p comm.
 */
ZRT_API zrt_status_t zrt_comm_mem_alloc(zrt_comm_h comm, size_t bytes, void **ptr_p);

/**
 * @brief Free memory from zrt_comm_mem_alloc on @p comm; every rank passes the pointer of
 * the same allocation. No collective using it may be in flight. A pointer that is not one
 * (NULL included) fails with ZRT_ERR_INVALID_ARGUMENT, and every other rank fails with it;
 * ranks freeing different shared allocations fail with ZRT_ERR_MISMATCH; nothing is freed
 * on any rank.
 * Collective over @p comm, blocking. Thread-safe with respect to collectives on @p comm;
 * not to be called concurrently with other allocations or frees on @p comm.
 */
ZRT_API zrt_status_t zrt_comm_mem_free(zrt_comm_h comm, void *ptr);

/** @brief Bytes per element of @p dtype. Local, non-blocking, thread-safe. */
ZRT_API zrt_status_t zrt_dtype_size(zrt_dtype_t dtype, size_t *size_p);

/**
 * @brief Convert @p count values of @p from at @p in into @p to at @p out, as zerort
 * converts everywhere: through fp32 (fp64 to fp64 exactly), rounding to nearest even, NaN
 * kept quiet; equal dtypes are a copy. The buffers must not overlap
 * (ZRT_ERR_INVALID_ARGUMENT). Local, blocking, thread-safe; needs no communicator.
 */
ZRT_API zrt_status_t zrt_dtype_convert(const void *in, zrt_dtype_t from, void *out, zrt_dtype_t to,
                                       size_t count);

/**
 * @brief Start a reduce-scatter: reduce @p count elements of @p sendbuf over the ranks
 * and write this rank's shard (ceil(count/n) elements, zero padded) to @p recvbuf.
 * @p count is the total count, the same on every rank (NCCL's ncclReduceScatter takes
 * the receive count instead). The buffers must not overlap.
 * Collective, non-blocking. Thread-safe (the communicator serializes posts), but posts on
 * one communicator must come in the same order on every rank: post from one thread, or
 * order the threads yourself. The same holds for every post below.
 */
ZRT_API zrt_status_t zrt_comm_reduce_scatter_post(zrt_comm_h comm, const void *sendbuf,
                                                  void *recvbuf, size_t count, zrt_dtype_t dtype,
                                                  zrt_op_t op, zrt_request_h *request_p);

/**
 * @brief Start an all-gather: each rank contributes its shard of a @p count-element
 * buffer from @p sendbuf (its valid length, see zrt_shard_range) and every rank receives
 * all @p count elements in @p recvbuf. @p count is the total (received) count, the same
 * on every rank (NCCL's ncclAllGather takes the send count instead). In place when
 * @p sendbuf equals recvbuf plus the rank's offset.
 * Collective, non-blocking. Thread-safe, with posts ordered as for zrt_comm_reduce_scatter_post.
 */
ZRT_API zrt_status_t zrt_comm_all_gather_post(zrt_comm_h comm, const void *sendbuf, void *recvbuf,
                                              size_t count, zrt_dtype_t dtype,
                                              zrt_request_h *request_p);

/**
 * @brief Start an all-reduce of @p count elements (each rank's whole buffer). In place
 * when @p sendbuf equals @p recvbuf.
 * Collective, non-blocking. Thread-safe, with posts ordered as for zrt_comm_reduce_scatter_post.
 */
ZRT_API zrt_status_t zrt_comm_all_reduce_post(zrt_comm_h comm, const void *sendbuf, void *recvbuf,
                                              size_t count, zrt_dtype_t dtype, zrt_op_t op,
                                              zrt_request_h *request_p);

/**
 * @brief Start a broadcast of @p count elements of @p buf from @p root.
 * Collective, non-blocking. Thread-safe, with posts ordered as for zrt_comm_reduce_scatter_post.
 */
ZRT_API zrt_status_t zrt_comm_broadcast_post(zrt_comm_h comm, void *buf, size_t count,
                                             zrt_dtype_t dtype, int root, zrt_request_h *request_p);

/**
 * @brief Blocking reduce-scatter: post, wait, free (@p count is the total count).
 * Collective, blocking. Thread-safe as zrt_comm_reduce_scatter_post.
 */
ZRT_API zrt_status_t zrt_comm_reduce_scatter(zrt_comm_h comm, const void *sendbuf, void *recvbuf,
                                             size_t count, zrt_dtype_t dtype, zrt_op_t op);
/**
 * @brief Blocking all-gather: post, wait, free (@p count is the total count).
 * Collective, blocking. Thread-safe as zrt_comm_all_gather_post.
 */
ZRT_API zrt_status_t zrt_comm_all_gather(zrt_comm_h comm, const void *sendbuf, void *recvbuf,
                                         size_t count, zrt_dtype_t dtype);
/**
 * @brief Blocking all-reduce: post, wait, free. Collective, blocking. Thread-safe as
 * zrt_comm_all_reduce_post.
 */
ZRT_API zrt_status_t zrt_comm_all_reduce(zrt_comm_h comm, const void *sendbuf, void *recvbuf,
                                         size_t count, zrt_dtype_t dtype, zrt_op_t op);
/**
 * @brief Blocking broadcast: post, wait, free. Collective, blocking. Thread-safe as
 * zrt_comm_broadcast_post.
 */
ZRT_API zrt_status_t zrt_comm_broadcast(zrt_comm_h comm, void *buf, size_t count, zrt_dtype_t dtype,
                                        int root);

/**
 * @name API 2 names
 * The collectives' names before API 3 gave them the zrt_comm_ prefix; kept for API 3 only
 * (deprecated), each calls its new name.
 * @{
 */
/** @brief Deprecated: zrt_comm_reduce_scatter_post. */
static inline ZRT_DEPRECATED("zrt_comm_reduce_scatter_post") zrt_status_t
    zrt_reduce_scatter_post(zrt_comm_h comm, const void *sendbuf, void *recvbuf, size_t count,
                            zrt_dtype_t dtype, zrt_op_t op, zrt_request_h *request_p) {
  return zrt_comm_reduce_scatter_post(comm, sendbuf, recvbuf, count, dtype, op, request_p);
}
/** @brief Deprecated: zrt_comm_all_gather_post. */
static inline ZRT_DEPRECATED("zrt_comm_all_gather_post") zrt_status_t
    zrt_all_gather_post(zrt_comm_h comm, const void *sendbuf, void *recvbuf, size_t count,
                        zrt_dtype_t dtype, zrt_request_h *request_p) {
  return zrt_comm_all_gather_post(comm, sendbuf, recvbuf, count, dtype, request_p);
}
/** @brief Deprecated: zrt_comm_all_reduce_post. */
static inline ZRT_DEPRECATED("zrt_comm_all_reduce_post") zrt_status_t
    zrt_all_reduce_post(zrt_comm_h comm, const void *sendbuf, void *recvbuf, size_t count,
                        zrt_dtype_t dtype, zrt_op_t op, zrt_request_h *request_p) {
  return zrt_comm_all_reduce_post(comm, sendbuf, recvbuf, count, dtype, op, request_p);
}
/** @brief Deprecated: zrt_comm_broadcast_post. */
static inline ZRT_DEPRECATED("zrt_comm_broadcast_post") zrt_status_t
    zrt_broadcast_post(zrt_comm_h comm, void *buf, size_t count, zrt_dtype_t dtype, int root,
                       zrt_request_h *request_p) {
  return zrt_comm_broadcast_post(comm, buf, count, dtype, root, request_p);
}
/** @brief Deprecated: zrt_comm_reduce_scatter. */
static inline ZRT_DEPRECATED("zrt_comm_reduce_scatter") zrt_status_t
    zrt_reduce_scatter(zrt_comm_h comm, const void *sendbuf, void *recvbuf, size_t count,
                       zrt_dtype_t dtype, zrt_op_t op) {
  return zrt_comm_reduce_scatter(comm, sendbuf, recvbuf, count, dtype, op);
}
/** @brief Deprecated: zrt_comm_all_gather. */
static inline ZRT_DEPRECATED("zrt_comm_all_gather") zrt_status_t
    zrt_all_gather(zrt_comm_h comm, const void *sendbuf, void *recvbuf, size_t count,
                   zrt_dtype_t dtype) {
  return zrt_comm_all_gather(comm, sendbuf, recvbuf, count, dtype);
}
/** @brief Deprecated: zrt_comm_all_reduce. */
static inline ZRT_DEPRECATED("zrt_comm_all_reduce") zrt_status_t
    zrt_all_reduce(zrt_comm_h comm, const void *sendbuf, void *recvbuf, size_t count,
                   zrt_dtype_t dtype, zrt_op_t op) {
  return zrt_comm_all_reduce(comm, sendbuf, recvbuf, count, dtype, op);
}
/** @brief Deprecated: zrt_comm_broadcast. */
static inline ZRT_DEPRECATED("zrt_comm_broadcast") zrt_status_t
    zrt_broadcast(zrt_comm_h comm, void *buf, size_t count, zrt_dtype_t dtype, int root) {
  return zrt_comm_broadcast(comm, buf, count, dtype, root);
}
/** @} */

ZRT_END_DECLS

#endif /* ZERORT_COMM_H */
