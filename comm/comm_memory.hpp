// The memory of zrt_comm_mem_alloc / zrt_comm_mem_free on one communicator: buffers the
// backend reads in place (Backend::shared_buffers: shm's SharedSegments, or hier's node
// segments) where it has them, else page-aligned, zeroed private memory.
//
// Both calls are collective and fail on every rank together: the ranks agree that the
// arguments are good and the communicator usable before anything is allocated or freed.
// Allocations are numbered per call on every rank, failed calls included, so the ranks
// (and hier's nodes, which allocate apart) compare numbers before freeing anything.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "comm/backend.hpp"
#include "runtime/mpi_comm.hpp"

namespace zrt {

class CommMemory {
 public:
  // What the memory needs of its communicator while the ranks agree.
  struct Hooks {
    // Throws when the communicator can no longer serve (the watchdog failed it).
    std::function<void()> usable;
    // Steps the communicator's collectives: a peer may need one of ours to progress before
    // it reaches the agreement.
    std::function<void()> progress;
  };
  // Collective over comm (duplicated: the agreements never match the data traffic's
  // messages). shared: the backend's shared buffers, or nullptr for private memory.
  CommMemory(MPI_Comm comm, SharedBuffers *shared, Hooks hooks);
  ~CommMemory();  // frees the private memory left, unless abandoned
  CommMemory(const CommMemory &) = delete;
  CommMemory &operator=(const CommMemory &) = delete;

  // zrt_comm_mem_alloc: bytes (> 0) zeroed. bad_argument: the caller's argument error
  // found on this rank ("ptr_p is NULL"), which fails the call on every rank rather than
  // leave the others waiting. Collective.
  void *allocate(size_t bytes, const std::string &bad_argument);
  // zrt_comm_mem_free: every rank passes its pointer of the same allocate call, or nothing
  // is freed anywhere. Collective.
  void free(void *pointer);

  // The ranks that map each allocation in place (shared memory), or 0 when the memory is
  // private: then a collective on it reads nothing in place. Local.
  int shared_peers() const { return shared_ != nullptr ? shared_->peers() : 0; }
  // SharedBuffers::place_of and peer_view on this memory (private memory: none). Local.
  std::pair<uint64_t, uint64_t> place_of(const void *mine, size_t bytes) const {
    return shared_ != nullptr ? shared_->place_of(mine, bytes)
                              : std::pair<uint64_t, uint64_t>{SharedBuffers::kNone, 0};
  }
  char *peer_view(const void *mine, size_t bytes, int r) const {
    return shared_ != nullptr ? shared_->peer_view(mine, bytes, r) : nullptr;
  }

  // The watchdog failed the communicator: an abandoned collective may still write into
  // private memory and use the communicator, so both are left for MPI_Finalize.
  void abandon() noexcept;

 private:
  // Every rank arrives, with the communicator usable, and passes checks, or all fail.
  void gate(const std::function<void()> &checks);

  MpiComm comm_;
  SharedBuffers *shared_ = nullptr;
  Hooks hooks_;
  std::mutex mutex_;
  std::map<void *, uint64_t> private_;  // allocate's, by number, where there is no shared
  uint64_t next_ = 0;                   // the next allocate call's number
  bool abandoned_ = false;
};

}  // namespace zrt
