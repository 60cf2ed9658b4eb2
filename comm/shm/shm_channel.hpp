// The shared memory of the shm backend: each rank of a node owns a ring of `depth` slots
// of `slot_bytes` in an MPI-3 shared window (every peer maps it), and two counters.
//
// The protocol is a pipeline of numbered steps, the same sequence on every rank across all
// the collectives of a communicator. In step s each rank *produces*: writes slot s % depth
// of its own ring, then publishes produced = s + 1 (release). Then it *consumes*: once every
// peer has produced s (acquire), it reads what it needs from their slot s % depth and
// publishes consumed = s + 1. A rank reuses a slot only when every peer has consumed the
// step that last used it, so up to `depth` steps are in flight and the copies of one rank
// overlap the reductions of the others. Nothing ever waits inside the channel: callers ask
// can_produce / can_consume and come back later (the progress engine's state machines).
//
// A step that has nothing for a rank to write is still produced (an empty step), so the
// counters of all ranks advance together whatever the data layout.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace zrt {

class ShmChannel {
 public:
  // Collective over comm, whose ranks must share memory. slot_bytes is rounded up to a
  // multiple of 64 (a cache line); depth >= 2.
  ShmChannel(MPI_Comm comm, size_t slot_bytes, int depth);
  ~ShmChannel();  // collective (MPI_Win_free), unless abandoned
  // A peer may never free its part (an operation was abandoned, or the context is
  // broken): the destructor leaves the window mapped until the process ends. Local.
  void abandon() { abandoned_ = true; }
  ShmChannel(const ShmChannel &) = delete;
  ShmChannel &operator=(const ShmChannel &) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  size_t slot_bytes() const { return slot_bytes_; }
  int depth() const { return depth_; }

  // Steps are handed out in sequence: an operation reserves its steps when it starts.
  uint64_t reserve(uint64_t steps) {
    uint64_t base = next_reserved_;
    next_reserved_ += steps;
    return base;
  }

  // This rank may now write its slot for step s: it is the next step to produce and every
  // peer has consumed step s - depth.
  bool can_produce(uint64_t s) const;
  void produced(uint64_t s);  // publishes step s as written
  // Every peer has produced step s and s is this rank's next step to consume.
  bool can_consume(uint64_t s) const;
  void consumed(uint64_t s);

  char *slot(int rank, uint64_t s) const {
    return slots_[static_cast<size_t>(rank)] + (s % static_cast<uint64_t>(depth_)) * slot_bytes_;
  }

 private:
  struct alignas(64) Counter {
    std::atomic<uint64_t> value;
    char pad[64 - sizeof(std::atomic<uint64_t>)];
  };
  struct Control {
    Counter produced;
    Counter consumed;
  };
  static constexpr size_t kControlBytes = 4096;  // keeps the slots page-aligned

  MPI_Win win_ = MPI_WIN_NULL;
  int rank_ = 0, size_ = 1;
  size_t slot_bytes_ = 0;
  int depth_ = 2;
  std::vector<Control *> control_;  // per rank, mapped
  std::vector<char *> slots_;       // per rank, mapped
  uint64_t next_produce_ = 0, next_consume_ = 0, next_reserved_ = 0;
  bool abandoned_ = false;
};

}  // namespace zrt
