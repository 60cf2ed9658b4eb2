// The object behind zrt_comm_h: a group of ranks, its backend, and the progress engine
// that starts its collectives in order and steps them to completion.
#pragma once

#include <mpi.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/backend.hpp"
#include "comm/request.hpp"
#include "runtime/handle_table.hpp"

namespace zrt {

class Context;

class Communicator {
 public:
  // Collective over user_comm (duplicated twice: data traffic and argument checks never
  // match each other's messages).
  struct Options {
    std::string backend = "auto";  // or a backend name
    bool deterministic = false;    // reductions sum in rank order (ordered_sum.hpp)
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
  const char *backend_name() const { return backend_->name(); }
  bool check_args() const { return check_args_; }
  bool deterministic() const { return deterministic_; }

  // Validates args locally and creates the request (owned by the caller). Collective in
  // that every rank must post the same sequence of collectives.
  std::unique_ptr<Request> post(CollArgs args);
  // Starts ready requests in sequence order and steps running ones.
  void progress();
  // Requests created and not yet freed.
  int live_requests() const { return live_requests_.load(); }
  void request_freed() { --live_requests_; }

  uintptr_t handle = 0;  // this communicator's own handle value

 private:
  void validate(const CollArgs &args) const;
  void start(Request &request);
  void finish_check(Request &request);
  void post_check(Request &request, bool poison);
  void drop_orphan(Request &request);

  Context &context_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm check_comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  bool world_ = false;
  bool check_args_ = true;
  bool deterministic_ = false;
  std::unique_ptr<Backend> backend_;
  std::mutex mutex_;
  uint64_t next_seq_ = 0;
  std::deque<Request *> unstarted_;  // in sequence order
  std::vector<Request *> running_;
  // Argument checks of posts this rank rejected; the other ranks still take part in them.
  std::vector<std::unique_ptr<Request>> orphans_;
  std::atomic<int> live_requests_{0};
};

HandleTable<Communicator> &comm_table();
HandleTable<Request> &request_table();
Communicator &comm_from(zrt_comm_h handle, const char *argument = "comm");
Request &request_from(zrt_request_h handle, const char *argument = "request");

// The backend registry (registry.cpp): the backends this build has, and the choice.
std::unique_ptr<Backend> create_backend(Communicator &comm, const std::string &requested);
std::vector<std::string> backend_names();

}  // namespace zrt
