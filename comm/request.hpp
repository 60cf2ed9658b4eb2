// The object behind zrt_request_h: one collective on one communicator, moving through
//   Checking -> Ready -> Running -> Done (or Failed from any of them).
// Checking agrees on the arguments across ranks (comm.check_args); Ready waits for every
// earlier request of the communicator to start, so backends see collectives in the same
// order on every rank whatever order the program tests them in.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

#include "comm/backend.hpp"
#include "zerort/status.h"

namespace zrt {

class Communicator;

class Request {
 public:
  enum class Phase { Checking, Ready, Running, Done, Failed };

  Request(Communicator &comm, const CollArgs &args) : comm_(comm), args_(args) {}

  zrt_status_t test();  // drives the communicator's progress, then reports
  zrt_status_t wait();
  bool finished() const { return phase_ == Phase::Done || phase_ == Phase::Failed; }
  Communicator &comm() const { return comm_; }
  const CollArgs &args() const { return args_; }

 private:
  friend class Communicator;
  zrt_status_t report() const;
  void fail(zrt_status_t status, std::string message);

  Communicator &comm_;
  CollArgs args_;
  Phase phase_ = Phase::Ready;
  MPI_Request check_request_ = MPI_REQUEST_NULL;
  int64_t check_values_[4] = {0, 0, 0, 0};
  std::unique_ptr<BackendOp> op_;
  zrt_status_t status_ = ZRT_SUCCESS;
  std::string message_;
  bool orphan_ = false;  // owned by the communicator: a rejected post's argument check
};

}  // namespace zrt
