/**
 * @file zerort/checkpoint.h
 * @brief Checkpoints: one parallel HDF5 file per save, independent of the world size and
 * the ZeRO stage.
 *
 * Each parameter is stored as global datasets of its full logical shape (the fp32 master
 * weights and each optimizer state tensor), each rank writing and reading its own
 * hyperslab, so a checkpoint saved on N ranks at stage S loads on M ranks at stage T with
 * no conversion, and `h5ls -r` / `h5dump` show it plainly. Attributes hold the format
 * version, step, stage and world size at save, dtypes, optimizer and hyper-parameters, the
 * loss scaler state, the configuration, the program's own metadata (a JSON text: data
 * loader position, RNG seeds...) and an xxHash checksum per dataset.
 *
 * Saves are atomic: the file is written as PATH.tmp and renamed once every rank has closed
 * and synced it, so a crash during a save leaves the previous checkpoint intact. Each rank
 * writes its own blocks with pwrite, checksummed as they go out; a load reads each byte
 * from storage once, checking it before the engine changes. zrt_checkpoint_save_post
 * copies the state and writes in the background while training goes on.
 */
#ifndef ZERORT_CHECKPOINT_H
#define ZERORT_CHECKPOINT_H

#include "zerort/defs.h"
#include "zerort/engine.h"
#include "zerort/request.h"
#include "zerort/status.h"

ZRT_BEGIN_DECLS

/**
 * @name zrt_checkpoint_params_field
 * Which fields of zrt_checkpoint_params_t the caller set.
 * @{
 */
#define ZRT_CHECKPOINT_PARAM_FIELD_METADATA ZRT_BIT(0)
#define ZRT_CHECKPOINT_PARAM_FIELD_KEEP_LAST ZRT_BIT(1)
/** every field of this header's version */
#define ZRT_CHECKPOINT_PARAM_FIELD_ALL (ZRT_BIT(2) - 1)
/** @} */

/** @brief Parameters of zrt_checkpoint_save. */
typedef struct zrt_checkpoint_params {
  uint64_t field_mask;
  const char *metadata; /**< the program's JSON text, stored as is; default none */
  int keep_last;        /**< with "{step}" in the path: keep only the newest keep_last
                             checkpoints of that pattern; 0 keeps all (default) */
} zrt_checkpoint_params_t;

/**
 * @brief Save the engine's state to @p path ("{step}" in it becomes the step number,
 * zero-padded to 8 digits). Collective, blocking; every rank passes the same path. Not
 * thread-safe with other calls on @p engine, nor with other checkpoint calls (see
 * zrt_checkpoint_describe).
 */
ZRT_API zrt_status_t zrt_checkpoint_save(zrt_engine_h engine, const char *path,
                                         const zrt_checkpoint_params_t *params);

/**
 * @brief Start saving the engine's state to @p path and return: the file is written in
 * the background while training continues, and nothing after this call changes what it
 * saves. The state is first copied into pinned host memory from the engine's pool: a
 * device engine's before the call returns; a host engine's on the save's thread, while
 * the program's forward and backward run (they read the state, they do not change it),
 * and the calls that change it (zrt_engine_step, zrt_param_set, a save or load) wait for
 * that copy first. Until the next zrt_engine_step returns, the program must not write
 * parameter values through zrt_param_data's pointers (reading them, as forward does, is
 * fine). Collective, like zrt_checkpoint_save, with the same arguments and the same file.
 * One save at a time: a save or load (of any kind) waits for the one before. The engine's
 * next zrt_engine_step publishes the file once every rank's writes are done; a write that
 * failed on any rank (a full file system) makes that step return ZRT_ERR_IO on every rank,
 * naming the rank and the reason, before the step changes anything (calling it again
 * takes the step), and the previous checkpoint is kept. zrt_engine_destroy and
 * zrt_finalize wait for it. *request_p: a request (zerort/request.h) like a collective's;
 * zrt_request_test and zrt_request_wait are collective over the engine's ranks while the
 * save is in flight (they may publish it), local once it has ended; the save's failure is
 * theirs (ZRT_ERR_IO naming the rank and the reason; the previous checkpoint is kept);
 * zrt_request_free it once it has ended. Not thread-safe with other calls on @p engine.
 */
ZRT_API zrt_status_t zrt_checkpoint_save_post(zrt_engine_h engine, const char *path,
                                              const zrt_checkpoint_params_t *params,
                                              zrt_request_h *request_p);

/**
 * @name API 2 names
 * The background save's own request idiom before API 3; kept for API 3 only (deprecated).
 * zrt_checkpoint_save_async is zrt_checkpoint_save_post; zrt_checkpoint_test sets *done_p
 * and frees the request once the save has ended; zrt_checkpoint_wait waits and frees it.
 * @{
 */
/** @brief Deprecated: a zrt_request_h. */
typedef zrt_request_h zrt_checkpoint_request_h;
/** @brief Deprecated: zrt_checkpoint_save_post. */
ZRT_API ZRT_DEPRECATED("zrt_checkpoint_save_post") zrt_status_t
    zrt_checkpoint_save_async(zrt_engine_h engine, const char *path,
                              const zrt_checkpoint_params_t *params,
                              zrt_checkpoint_request_h *request_p);
/** @brief Deprecated: zrt_request_test, then zrt_request_free once it has ended. */
ZRT_API ZRT_DEPRECATED("zrt_request_test") zrt_status_t
    zrt_checkpoint_test(zrt_checkpoint_request_h request, int *done_p);
/** @brief Deprecated: zrt_request_wait, then zrt_request_free. */
ZRT_API ZRT_DEPRECATED("zrt_request_wait") zrt_status_t
    zrt_checkpoint_wait(zrt_checkpoint_request_h request);
/** @} */

/**
 * @brief Load @p path into a committed engine with the same parameter names and shapes
 * (any world size, any stage): master weights, compute copies, optimizer state, step and
 * loss scaler. A missing dataset, a shape that differs or a newer format is ZRT_ERR_IO with
 * a message naming it, on every rank, and the engine is left as it was. A block that does
 * not match its checksum is ZRT_ERR_IO on every rank naming the dataset and the block; no
 * byte of it reaches the engine, but blocks checked before it may have (each block is copied
 * in as soon as it is checked), so the engine then refuses zrt_engine_step and saves
 * (ZRT_ERR_INVALID_STATE) until a load succeeds or every parameter is set again with
 * zrt_param_set (which sets weights; the optimizer moments keep what they hold). A refused
 * step drops its micro-step's gradients. Collective, blocking. Not thread-safe with other calls on
 * @p engine, nor with other checkpoint calls (see zrt_checkpoint_describe).
 */
ZRT_API zrt_status_t zrt_checkpoint_load(zrt_engine_h engine, const char *path);

/**
 * @brief The checkpoint's attributes as JSON (step, stage and world size at save,
 * optimizer, the program's metadata under "metadata"...), without an engine or MPI.
 * snprintf-like, as zrt_context_describe. Local, blocking (it reads the file). Not
 * thread-safe: parallel HDF5 takes calls from one thread at a time, so no two checkpoint
 * calls (of any handle or engine) may run at once.
 */
ZRT_API zrt_status_t zrt_checkpoint_describe(const char *path, char *buf, size_t size,
                                             size_t *length_p);

/* --- Reading and writing checkpoint files without an engine (tools, imports) ---------- */

/** @brief An open checkpoint file (zrt_checkpoint_open or zrt_checkpoint_create). */
typedef struct zrt_checkpoint *zrt_checkpoint_h;

/**
 * @name zrt_checkpoint_tensor_field
 * Which fields of zrt_checkpoint_tensor_t to fill.
 * @{
 */
#define ZRT_CHECKPOINT_TENSOR_FIELD_NAME ZRT_BIT(0)
/** ndim, shape, numel */
#define ZRT_CHECKPOINT_TENSOR_FIELD_SHAPE ZRT_BIT(1)
/** checksum, has_checksum */
#define ZRT_CHECKPOINT_TENSOR_FIELD_CHECKSUM ZRT_BIT(2)
#define ZRT_CHECKPOINT_TENSOR_FIELD_ALL (ZRT_BIT(3) - 1)
/** @} */

/** @brief One dataset of a checkpoint: the fields named in field_mask. */
typedef struct zrt_checkpoint_tensor {
  uint64_t field_mask; /**< set by the caller: the fields to fill (ZRT_CHECKPOINT_TENSOR_FIELD_*) */
  const char *name;    /**< "params/NAME" or "optimizer/KIND/NAME"; valid until close */
  int ndim;
  int64_t shape[8];
  int64_t numel;
  uint64_t checksum; /**< the stored XXH3-64 of its fp32 values, row-major; in format 2, for
                          a dataset of more than one checksum block (the root attribute
                          checksum_block, 2^20 elements), XXH3-64 of the blocks' own */
  int has_checksum;
} zrt_checkpoint_tensor_t;

/**
 * @brief Open a checkpoint read-only, serially (no MPI needed). Local, blocking. Not
 * thread-safe (see zrt_checkpoint_describe).
 */
ZRT_API zrt_status_t zrt_checkpoint_open(const char *path, zrt_checkpoint_h *checkpoint_p);

/**
 * @brief Start writing a weights-only checkpoint at @p path (as PATH.tmp until
 * zrt_checkpoint_close): loading it gives an engine these weights, zero optimizer state
 * and step 0. @p metadata: JSON text or NULL. Local, blocking. Not thread-safe (see
 * zrt_checkpoint_describe).
 */
ZRT_API zrt_status_t zrt_checkpoint_create(const char *path, const char *metadata,
                                           zrt_checkpoint_h *checkpoint_p);

/**
 * @brief Close; for a created checkpoint, publish it (rename PATH.tmp to PATH). The handle
 * is stale afterwards. Local, blocking. Not thread-safe (see zrt_checkpoint_describe).
 */
ZRT_API zrt_status_t zrt_checkpoint_close(zrt_checkpoint_h checkpoint);

/** @brief Number of datasets. Local, non-blocking. Not thread-safe (see zrt_checkpoint_describe).
 */
ZRT_API zrt_status_t zrt_checkpoint_tensor_count(zrt_checkpoint_h checkpoint, int *count_p);

/**
 * @brief The fields of dataset @p index (0-based, sorted by name) named in
 * tensor_p->field_mask: name, shape, checksum. Unknown bits fail with
 * ZRT_ERR_INVALID_ARGUMENT. Local, non-blocking. Not thread-safe (see
 * zrt_checkpoint_describe).
 */
ZRT_API zrt_status_t zrt_checkpoint_tensor(zrt_checkpoint_h checkpoint, int index,
                                           zrt_checkpoint_tensor_t *tensor_p);

/**
 * @brief Read dataset @p index as numel fp32 values, row-major. Local, blocking. Not
 * thread-safe (see zrt_checkpoint_describe).
 */
ZRT_API zrt_status_t zrt_checkpoint_read(zrt_checkpoint_h checkpoint, int index, float *values);

/**
 * @brief Recompute dataset @p index's checksum: *ok_p is 1 when it matches the stored one,
 * 0 when it does not (or none is stored). Local, blocking (it reads the dataset). Not
 * thread-safe (see zrt_checkpoint_describe).
 */
ZRT_API zrt_status_t zrt_checkpoint_verify(zrt_checkpoint_h checkpoint, int index, int *ok_p);

/**
 * @brief Add parameter @p name (stored as params/NAME) to a created checkpoint, with its
 * checksum. Local, blocking. Not thread-safe (see zrt_checkpoint_describe).
 */
ZRT_API zrt_status_t zrt_checkpoint_write(zrt_checkpoint_h checkpoint, const char *name, int ndim,
                                          const int64_t *shape, const float *values);

ZRT_END_DECLS

#endif /* ZERORT_CHECKPOINT_H */
