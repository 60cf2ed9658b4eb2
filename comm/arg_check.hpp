// The cross-rank argument check of one collective (comm.check_args): before a backend
// starts it, the ranks agree that they all posted the same collective - kind, count,
// dtype, op, root, the backend each chose, and what it carries where the poster says
// (CollPurpose: which bucket, for what, at which step) - so that a mismatch fails on every
// rank with a message that names it instead of corrupting data or hanging inside the
// backend.
//
// Each rank contributes a signature of its arguments, its count and its backend's index,
// each next to its negation: one nonblocking MPI_MAX all-reduce then yields the lowest and
// the highest value of each across ranks. A rank that rejected its own arguments sends
// kPoison as its signature instead, so that the others fail the collective rather than
// wait for that rank forever.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "comm/coll_args.hpp"

namespace zrt {

class ArgCheck {
 public:
  ArgCheck() = default;
  ArgCheck(const ArgCheck &) = delete;
  ArgCheck &operator=(const ArgCheck &) = delete;

  // Posts this rank's part of the check of args on the backend at index `backend` of the
  // communicator's BackendSet or, with poison, the news that this rank rejected them.
  // Local and nonblocking: an MPI_Iallreduce on comm, which every rank posts for the same
  // collectives in the same order. Throws Error(ZRT_ERR_MPI).
  void post(MPI_Comm comm, const CollArgs &args, int backend, bool poison);
  // Whether every rank's part has arrived. Local, nonblocking; throws Error(ZRT_ERR_MPI).
  bool test();
  // Once test() returned true: returns when every rank posted the same arguments, else
  // throws Error(ZRT_ERR_REMOTE) when some rank rejected its own, or
  // Error(ZRT_ERR_MISMATCH) naming what differs. Messages begin with args.describe() and
  // rank, this rank. Local.
  void verdict(const CollArgs &args, int rank) const;
  // The communicator failed with the check in flight: MPI may write its result until it
  // finalizes, so the storage is buried (runtime/graveyard.hpp), not freed. Local.
  void abandon();

 private:
  // What the ranks compare. Each is sent followed by its negation, so that after the
  // all-reduce slot 2i holds the highest value across ranks and slot 2i+1 minus the lowest.
  enum Value { kSignature, kCount, kBackend, kPurpose, kStep, kCompared };
  static constexpr int kSlots = 2 * kCompared;
  int64_t *slots() { return reinterpret_cast<int64_t *>(storage_.get()); }
  int64_t highest(Value v) const {
    return reinterpret_cast<const int64_t *>(storage_.get())[2 * v];
  }
  int64_t lowest(Value v) const {
    return -reinterpret_cast<const int64_t *>(storage_.get())[2 * v + 1];
  }

  MPI_Request request_ = MPI_REQUEST_NULL;
  // Where MPI writes the result; on the heap so that an abandoned check can bury it.
  std::unique_ptr<char[]> storage_{new char[kSlots * sizeof(int64_t)]()};
};

}  // namespace zrt
