/**
 * @file zerort/request.h
 * @brief Requests: the one idiom of every asynchronous operation of zerort.
 *
 * A call named zrt_<object>_<op>_post starts an operation and returns a zrt_request_h:
 * the collectives (zrt_comm_all_reduce_post, ...; zerort/comm.h) and the background
 * checkpoint save (zrt_checkpoint_save_post; zerort/checkpoint.h). zrt_request_test
 * advances a request and returns ZRT_SUCCESS once it is done, ZRT_IN_PROGRESS before;
 * zrt_request_wait blocks until it is done; zrt_request_free releases it, once done. An
 * operation that failed reports its error, with its message, on every test and wait.
 */
#ifndef ZERORT_REQUEST_H
#define ZERORT_REQUEST_H

#include "zerort/defs.h"
#include "zerort/status.h"

ZRT_BEGIN_DECLS

/**
 * @brief Advance a request. @return ZRT_SUCCESS when it is done, ZRT_IN_PROGRESS while it
 * runs, or the error that ended it (the same error on every later call).
 * Local for a collective; collective over the engine's ranks for a checkpoint save still
 * in flight (the test may publish it). Non-blocking. A request may be tested from one
 * thread at a time (other requests and the progress thread may run meanwhile).
 */
ZRT_API zrt_status_t zrt_request_test(zrt_request_h request);

/**
 * @brief Block until a request is done. @return as zrt_request_test, never IN_PROGRESS.
 * Local for a collective, collective for a checkpoint save in flight; blocking. A request
 * may be waited on from one thread at a time.
 */
ZRT_API zrt_status_t zrt_request_wait(zrt_request_h request);

/**
 * @brief Release a request. Fails with ZRT_ERR_INVALID_STATE, freeing nothing, while it
 * is in progress. The handle is stale afterwards. Local, non-blocking. Not thread-safe
 * with other calls on @p request.
 */
ZRT_API zrt_status_t zrt_request_free(zrt_request_h request);

ZRT_END_DECLS

#endif /* ZERORT_REQUEST_H */
