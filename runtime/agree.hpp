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

// Collective over comm. ZRT_IN_PROGRESS counts as success. Throws Error(ZRT_ERR_MPI) only
// when MPI itself fails. While waiting for the other ranks it calls progress(), if given:
// a caller with operations in flight that others may be waiting for keeps them moving.
AgreedStatus agree_status(MPI_Comm comm, zrt_status_t local, const std::string &message,
                          const std::function<void()> &progress = {});

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
