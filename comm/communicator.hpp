// The object behind zrt_comm_h: a group of ranks, its backends, its watchdog, its memory
// (comm_memory.hpp), and the progress engine that starts its collectives in order and
// steps them to completion. The engine decides when each request moves on; the request
// (collective_request.hpp) makes the move, its argument check included (arg_check.hpp).
#pragma once

#include <mpi.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/backend.hpp"
#include "comm/collective_request.hpp"
#include "comm/comm_memory.hpp"
#include "comm/registry.hpp"
#include "runtime/agreement_watch.hpp"
#include "runtime/mpi_comm.hpp"
#include "runtime/watchdog.hpp"

namespace zrt {

class Context;

class Communicator {
 public:
  // Collective over user_comm (duplicated: data traffic, argument checks, memory
  // agreements and the watchdog each have their own, so they never match each other's
  // messages).
  struct Options {
    std::string backend = "auto";  // or a backend name
    bool deterministic = false;    // reductions sum in rank order (ordered_sum.hpp)
    double timeout = 0;            // seconds; 0: no watchdog
    // Whether a timeout here breaks the context (runtime/breakage.hpp): so for the
    // context's own communicators (the world's, the engines'); a program's communicator
    // (zrt_comm_create) fails alone, and its ranks may go on with the others.
    bool breaks_context = true;
  };
  Communicator(Context &context, MPI_Comm user_comm, const Options &options, bool world);
  ~Communicator();
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;

  Context &context() const { return context_; }
  MPI_Comm mpi_comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool world() const { return world_; }
  const char *backend_name() const { return backends_->primary(); }
  bool check_args() const { return check_args_; }
  bool deterministic() const { return deterministic_; }
  double timeout() const { return watchdog_ ? watchdog_->timeout() : 0; }
  void describe(nlohmann::json &out) const;

  // Validates args locally (validate_args.hpp), chooses the backend and creates the
  // request (owned by the caller). Collective in that every rank must post the same
  // sequence of collectives.
  std::unique_ptr<Request> post(CollArgs args);
  // Starts ready requests in sequence order, steps running ones, runs the watchdog.
  void progress();
  // The progress thread's entry points: they skip a communicator another thread is
  // progressing. progress_from_thread returns whether requests are in flight.
  bool progress_from_thread();
  bool watch_from_thread();
  // Fails every request in flight and every later post with why, and keeps the MPI
  // communicators at destruction: for an owner whose own agreements timed out (the
  // ranks are no longer in step, so nothing may wait for them again).
  void give_up(const std::string &why);
  // zrt_comm_mem_alloc / zrt_comm_mem_free.
  CommMemory &memory() { return *memory_; }
  // Every rank has this communicator: its creation was agreed (its first post says the
  // same). From then on the destructor meets the other ranks under the watch before the
  // backends' collective frees, so that a rank that never comes (stopped, or stepping
  // while this one tears down) is named after the timeout instead of waited for. Until
  // then a rank whose creation failed unwinds the same frees without the meeting.
  void set_agreed() { agreed_ = true; }

  // Requests created and not yet freed.
  int live_requests() const { return live_requests_.load(); }
  void request_freed() { --live_requests_; }

  uintptr_t handle = 0;  // this communicator's own handle value

 private:
  void progress_locked();
  void watch_locked();
  void start(Request &request);
  void drop_orphan(Request &request);
  void fail_all(const WatchVerdict &verdict);

  Context &context_;
  // Declared before what uses them, so that they are freed after it.
  MpiComm comm_;                                 // the backends' data traffic
  std::unique_ptr<AgreementWatch> agree_watch_;  // deadlines of the set-up's agreements
  MpiComm check_comm_;                           // the argument checks
  int rank_ = 0, size_ = 1;
  bool world_ = false;
  bool check_args_ = true;
  bool deterministic_ = false;
  std::unique_ptr<BackendSet> backends_;
  std::unique_ptr<CommMemory> memory_;  // uses the backends' shared buffers
  std::unique_ptr<Watchdog> watchdog_;
  double last_watch_ = 0;  // steady-clock seconds of the watchdog's last poll
  std::mutex mutex_;
  uint64_t next_seq_ = 0;
  std::deque<Request *> unstarted_;  // in sequence order
  std::vector<Request *> running_;
  // Argument checks of posts this rank rejected; the other ranks still take part in them.
  std::vector<std::unique_ptr<Request>> orphans_;
  // Set once the watchdog failed this communicator: every later post fails with it.
  std::string failure_;
  std::atomic<int> live_requests_{0};
  bool agreed_ = false;
  bool breaks_context_ = true;
};

}  // namespace zrt
