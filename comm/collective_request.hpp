// The object behind zrt_request_h: one collective on one communicator, moving through
//   Checking -> Ready -> Running -> Done (or Failed from any of them).
// Checking agrees on the arguments across ranks (comm.check_args, comm/arg_check.hpp);
// Ready waits for every earlier request of the communicator to start, so backends see
// collectives in the same order on every rank whatever order the program tests them in.
//
// The program tests and waits; the communicator's progress engine decides when a request
// moves on and calls the transitions below, with the communicator locked. A transition
// records a failure in the request (test and wait report it) rather than throw it.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "comm/arg_check.hpp"
#include "comm/backend.hpp"
#include "runtime/async_request.hpp"
#include "zerort/status.h"

namespace zrt {

class Communicator;

class Request final : public AsyncRequest {
 public:
  enum class Phase { Checking, Ready, Running, Done, Failed };

  // A collective served by backend, the one at backend_index in the communicator's
  // BackendSet (which the argument check compares across ranks).
  Request(Communicator &comm, const CollArgs &args, Backend &backend, int backend_index);
  // An orphan: the argument check of a post this rank rejected. The other ranks' checks
  // wait for this rank's part, so it is posted all the same, poisoned; then the request
  // fails, with nothing to start. The communicator owns it.
  struct Orphan {};
  Request(Communicator &comm, const CollArgs &args, Orphan);
  ~Request() override;
  Request(const Request &) = delete;
  Request &operator=(const Request &) = delete;

  // --- the program's side (zrt_request_test / wait / free)
  zrt_status_t test() override;  // drives the communicator's progress, then reports
  zrt_status_t wait() override;
  std::string describe() const override { return args_.describe(); }
  void freed() override;  // the communicator counts its live requests
  // The progress thread may finish a request while the program tests it.
  bool finished() const override {
    Phase p = phase_.load(std::memory_order_acquire);
    return p == Phase::Done || p == Phase::Failed;
  }
  Communicator &comm() const { return comm_; }
  const CollArgs &args() const { return args_; }

  // --- the progress engine's side, with the communicator locked
  Phase phase() const { return phase_.load(std::memory_order_relaxed); }
  bool orphan() const { return orphan_; }
  double posted_at() const { return posted_at_; }  // steady-clock seconds, for the watchdog
  const char *backend_name() const { return backend_ != nullptr ? backend_->name() : "none"; }
  // Ready -> Checking: posts this rank's part of the argument check on check_comm (an
  // orphan's is poisoned). Failed when MPI refuses it.
  void post_check(MPI_Comm check_comm);
  // Checking -> Ready or Failed, once the check has completed on every rank; false while
  // it is in flight.
  bool checked();
  // Ready -> Running, or Failed when the backend refuses to start it.
  void start();
  // Running -> Done or Failed; returns whether the request left Running. Never waits.
  bool step();
  // -> Failed with message, the communicator having failed (the watchdog's verdict). An
  // argument check or an operation in flight may never complete, and MPI may write into
  // their buffers until it finalizes: they are buried (runtime/graveyard.hpp), not freed.
  void abandon(std::string message);

 private:
  zrt_status_t report() const;
  void fail(zrt_status_t status, std::string message);
  void set_phase(Phase p) { phase_.store(p, std::memory_order_release); }

  Communicator &comm_;
  CollArgs args_;
  std::atomic<Phase> phase_{Phase::Ready};
  Backend *backend_ = nullptr;  // none for an orphan
  int backend_index_ = 0;
  bool orphan_ = false;
  double posted_at_ = 0;
  ArgCheck check_;
  std::unique_ptr<BackendOp> op_;
  zrt_status_t status_ = ZRT_SUCCESS;
  std::string message_;
};

}  // namespace zrt
