// Agreement on success or failure across ranks. A collective step that fails on one rank
// must fail on all of them, or the others walk into the next collective and hang; every
// multi-step collective in zerort (init, communicator creation) goes through run_agreed.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>

#include "runtime/error.hpp"

namespace zrt {

struct AgreedStatus {
  zrt_status_t status = ZRT_SUCCESS;
  int failed_rank = -1;  // lowest failed rank, -1 if none
  std::string message;   // that rank's message
};

// Collective over comm. ZRT_IN_PROGRESS counts as success. Throws Error(ZRT_ERR_MPI) when
// MPI itself fails, and Error(ZRT_ERR_TIMEOUT) naming the ranks that did not arrive when
// comm's agreement watch (runtime/agreement_watch.hpp) runs out of time. While waiting for the
// other ranks it calls progress(), if given: a caller with operations in flight that others may be
// waiting for keeps them moving.
AgreedStatus agree_status(MPI_Comm comm, zrt_status_t local, const std::string &message,
                          const std::function<void()> &progress = {});

// The blocking collectives zerort's set-up and step use, each as its nonblocking form under
// comm's agreement watch like agree_status: a deadline, a verdict naming the ranks that did
// not arrive, and the core yielded while waiting. what names the operation.
void watched_bcast(MPI_Comm comm, void *data, size_t bytes, int root, const char *what);
// In place (MPI_IN_PLACE).
void watched_allreduce(MPI_Comm comm, void *data, int count, MPI_Datatype type, MPI_Op op,
                       const char *what);
// all receives count elements from every rank, in rank order.
void watched_allgather(MPI_Comm comm, const void *mine, int count, MPI_Datatype type, void *all,
                       const char *what);
void watched_barrier(MPI_Comm comm, const char *what);

// Runs step() on every rank; if it throws on any rank, every rank throws the error of the
// lowest failed rank, prefixed "rank R: ".
template <class Step>
void run_agreed(MPI_Comm comm, Step &&step, const std::function<void()> &progress = {}) {
  zrt_status_t local = ZRT_SUCCESS;
  std::string message;
  try {
    step();
  } catch (const Error &e) {
    local = e.status();
    message = e.what();
  } catch (const std::bad_alloc &) {
    local = ZRT_ERR_OUT_OF_MEMORY;
    message = "out of host memory";
  } catch (const std::exception &e) {
    local = ZRT_ERR_INTERNAL;
    message = e.what();
  }
  AgreedStatus agreed = agree_status(comm, local, message, progress);
  if (agreed.status != ZRT_SUCCESS)
    throw Error(agreed.status, fmt::format("rank {}: {}", agreed.failed_rank, agreed.message));
}

}  // namespace zrt
