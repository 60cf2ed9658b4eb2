// One rank's UCX endpoint to a group: a UCP context and worker of its own (so zerort never
// shares UCX state with the MPI library), the workers' addresses exchanged over MPI, an
// endpoint to every peer, and tagged sends and receives that the collectives poll.
// Every call is serialized by the owning communicator's lock (UCS_THREAD_MODE_SERIALIZED).
#pragma once

#include <mpi.h>
#include <ucp/api/ucp.h>

#include <cstdint>
#include <string>
#include <vector>

namespace zrt {

// One tagged transfer in flight; done() polls it. Owns the UCX request until released.
class UcxTransfer {
 public:
  UcxTransfer() = default;
  UcxTransfer(UcxTransfer &&other) noexcept;
  UcxTransfer &operator=(UcxTransfer &&other) noexcept;
  ~UcxTransfer();
  UcxTransfer(const UcxTransfer &) = delete;
  UcxTransfer &operator=(const UcxTransfer &) = delete;

  bool active() const { return active_; }
  // True once complete (and from then on); throws Error(ZRT_ERR_BACKEND) if it failed.
  bool done();
  // Gives up: cancels a receive, detaches from a send (UCX frees it when it completes).
  void cancel();

 private:
  friend class UcxWorker;
  ucp_worker_h worker_ = nullptr;
  void *request_ = nullptr;  // nullptr: completed at once
  bool active_ = false;
  bool receive_ = false;
  const char *what_ = "";
};

class UcxWorker {
 public:
  // Collective over comm: reads the UCX_* environment, starts UCP and a worker, exchanges
  // addresses, connects to every peer. Throws Error(ZRT_ERR_BACKEND) naming UCX's reason
  // and the transports asked for (UCX_TLS) when UCX cannot start.
  explicit UcxWorker(MPI_Comm comm);
  ~UcxWorker();  // collective over the same comm, unless abandoned
  // Some peer may never come to the destructor's barrier (its context is broken): the
  // destructor closes the endpoints without it. Local.
  void abandon() { abandoned_ = true; }
  UcxWorker(const UcxWorker &) = delete;
  UcxWorker &operator=(const UcxWorker &) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Lets UCX move data; returns whether it did anything.
  bool progress();
  UcxTransfer send(int peer, const void *buffer, size_t bytes, uint64_t tag);
  UcxTransfer receive(void *buffer, size_t bytes, uint64_t tag);
  // The transports in use, for zrt-info ("tcp", "posix, cma"...).
  const std::string &transports() const { return transports_; }

 private:
  void close();
  int rank_ = 0, size_ = 1;
  MPI_Comm comm_ = MPI_COMM_NULL;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<ucp_ep_h> eps_;
  std::string transports_;
  bool abandoned_ = false;
};

}  // namespace zrt
