// The buffers of zrt_comm_mem_alloc on an shm communicator: each allocation is an MPI-3
// shared window over the node's ranks (every rank's part mapped by every peer), so that a
// collective on such buffers reads its peers' data in place (mapped_phases.hpp) instead of
// copying it through the channel's slots first: one pass over the data instead of two.
//
// Segments are numbered in allocation order, the same on every rank (allocation is
// collective), so a rank names a buffer to its peers as (segment, offset in its part).
// Thread-safe: the progress thread resolves peers' buffers while the user's thread may be
// allocating or freeing others.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/backend.hpp"
#include "runtime/agreement_watch.hpp"
#include "runtime/mpi_comm.hpp"

namespace zrt {

class SharedSegments final : public SharedBuffers {
 public:
  // Collective over comm (duplicated: allocations never match the data traffic's messages).
  explicit SharedSegments(MPI_Comm comm);
  ~SharedSegments() override;  // collective: frees what is left
  SharedSegments(const SharedSegments &) = delete;
  SharedSegments &operator=(const SharedSegments &) = delete;

  // Collective: every rank asks for its own number of bytes (> 0, they may differ) and
  // gets its part, page-aligned and zeroed. Fails on every rank together when one rank's
  // request is bad or the window cannot be made.
  void *allocate(size_t bytes) override;
  // Collective: every rank passes the pointer allocate() returned to it in the same call.
  // A pointer this communicator did not allocate, or ranks freeing different allocations,
  // fail on every rank together and free nothing.
  void free(void *pointer) override;
  uint64_t number_of(const void *pointer) const override;
  int peers() const override { return size_; }
  std::pair<uint64_t, uint64_t> place_of(const void *mine, size_t bytes) const override;
  char *peer_view(const void *mine, size_t bytes, int r) const override;

  struct Location {
    uint64_t segment = kNone;  // kNone: not in a shared segment
    uint64_t offset = 0;
  };
  // Where [pointer, pointer + bytes) lies in this rank's parts. Local.
  Location locate(const void *pointer, size_t bytes) const;
  // Rank r's view of the same location in this process, or nullptr when the segment is
  // unknown here or [offset, offset + bytes) is not inside r's part. Local.
  const char *peer(Location where, int r, size_t bytes) const;

  size_t segments() const;
  // A collective was abandoned (Backend::abandoned): a peer may never free its part, and
  // MPI may still write into a buffer, so the destructor leaves the windows mapped and
  // their communicator to MPI_Finalize.
  void abandon() { abandoned_ = true; }

 private:
  struct Segment {
    MPI_Win win = MPI_WIN_NULL;
    std::vector<char *> base;   // per rank, mapped here
    std::vector<size_t> bytes;  // per rank
  };
  void release(Segment &segment);

  MpiComm comm_;
  std::unique_ptr<AgreementWatch> watch_;  // deadlines of the set-up and the frees
  int rank_ = 0, size_ = 1;
  mutable std::mutex mutex_;
  std::map<uint64_t, Segment> segments_;  // by number
  bool abandoned_ = false;
  uint64_t next_ = 0;  // the next allocate call's number, equal on every rank
};

}  // namespace zrt
