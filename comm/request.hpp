// The object behind zrt_request_h: one collective on one communicator, moving through
//   Checking -> Ready -> Running -> Done (or Failed from any of them).
// Checking agrees on the arguments across ranks (comm.check_args); Ready waits for every
// earlier request of the communicator to start, so backends see collectives in the same
// order on every rank whatever order the program tests them in.
#pragma once

#include <mpi.h>

#include <atomic>
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
  ~Request();

  zrt_status_t test();  // drives the communicator's progress, then reports
  zrt_status_t wait();
  // The progress thread may finish a request while the program tests it.
  bool finished() const {
    Phase p = phase_.load(std::memory_order_acquire);
    return p == Phase::Done || p == Phase::Failed;
  }
  Communicator &comm() const { return comm_; }
  const CollArgs &args() const { return args_; }

 private:
  friend class Communicator;
  zrt_status_t report() const;
  void fail(zrt_status_t status, std::string message);
  void set_phase(Phase p) { phase_.store(p, std::memory_order_release); }
  Phase phase() const { return phase_.load(std::memory_order_relaxed); }

  Communicator &comm_;
  CollArgs args_;
  std::atomic<Phase> phase_{Phase::Ready};
  Backend *backend_ = nullptr;  // chosen at post
  int backend_index_ = 0;
  double posted_at_ = 0;  // steady-clock seconds, for the watchdog
  MPI_Request check_request_ = MPI_REQUEST_NULL;
  // MPI writes the check's result here; on the heap so that an abandoned check can keep it.
  std::unique_ptr<char[]> check_storage_{new char[6 * sizeof(int64_t)]()};
  int64_t *check_values() { return reinterpret_cast<int64_t *>(check_storage_.get()); }
  std::unique_ptr<BackendOp> op_;
  zrt_status_t status_ = ZRT_SUCCESS;
  std::string message_;
  bool orphan_ = false;  // owned by the communicator: a rejected post's argument check
};

}  // namespace zrt
