/**
 * @file zerort/status.h
 * @brief Status codes, their strings, and the per-thread last error message.
 *
 * Every zerort call returns a zrt_status_t. ZRT_SUCCESS is 0, ZRT_IN_PROGRESS means an
 * asynchronous operation has not finished, and every other value is an error. Values are
 * stable: new codes are only ever appended.
 */
#ifndef ZERORT_STATUS_H
#define ZERORT_STATUS_H

#include "zerort/defs.h"

ZRT_BEGIN_DECLS

typedef enum zrt_status {
  ZRT_SUCCESS = 0,              /**< the call did what was asked */
  ZRT_IN_PROGRESS = 1,          /**< an asynchronous operation is still running */
  ZRT_ERR_INVALID_ARGUMENT = 2, /**< a NULL pointer, a bad enum, a size out of range */
  ZRT_ERR_INVALID_HANDLE = 3,   /**< a NULL, stale (freed) or foreign handle */
  ZRT_ERR_INVALID_STATE = 4,    /**< the call is not allowed now (e.g. after finalize) */
  ZRT_ERR_NOT_SUPPORTED = 5,    /**< valid, but not supported by this build or backend */
  ZRT_ERR_OUT_OF_MEMORY = 6,    /**< an allocation failed */
  ZRT_ERR_VERSION_MISMATCH = 7, /**< the header and the library disagree on the API */
  ZRT_ERR_CONFIG = 8,           /**< an unknown configuration key or a bad value */
  ZRT_ERR_MISMATCH = 9,         /**< ranks passed arguments that differ (count, op...) */
  ZRT_ERR_MPI = 10,             /**< MPI returned an error */
  ZRT_ERR_BACKEND = 11,         /**< a transport (UCX, NCCL, CUDA, shm) failed */
  ZRT_ERR_IO = 12,              /**< reading or writing a file failed */
  ZRT_ERR_TIMEOUT = 13,         /**< a collective did not complete within the timeout */
  ZRT_ERR_REMOTE = 14,          /**< another rank failed (see zrt_comm_agree_status) */
  ZRT_ERR_INTERNAL = 15 /**< a bug in zerort: please report it */,
  /** Not a value: makes every int a valid value of the type, so a bad value passed
      from C is an error zerort reports, not undefined behaviour in C++. */
  ZRT_STATUS_FORCE_INT_ = -2147483647 - 1
} zrt_status_t;

/**
 * @brief A short, static, English description of a status ("invalid argument").
 * @return never NULL; "unknown status" for values outside the enum.
 * Local, non-blocking, thread-safe.
 */
ZRT_API const char *zrt_status_string(zrt_status_t status);

/**
 * @brief The message of the last error raised on the calling thread.
 *
 * The message names the function, the argument and, where one exists, the accepted
 * values. It stays until the next error on the same thread; successful calls do not
 * clear it. The pointer is valid until the next zerort call on this thread.
 * @return never NULL; "" if no error has been raised on this thread.
 * Local, non-blocking, thread-safe (per-thread storage).
 */
ZRT_API const char *zrt_last_error_message(void);

/**
 * @brief Make @p message the calling thread's last error message, as zerort's own calls
 * do. For libraries layered on zerort (libzerort_nn's zrt_model_* calls), so that their
 * errors reach a program, and zrt_comm_agree_status, through the same message.
 * @param message copied; NULL is ZRT_ERR_INVALID_ARGUMENT.
 * Local, non-blocking, thread-safe (per-thread storage).
 */
ZRT_API zrt_status_t zrt_last_error_set(const char *message);

ZRT_END_DECLS

#endif /* ZERORT_STATUS_H */
