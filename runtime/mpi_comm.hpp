// An MPI communicator that zerort owns: freed when its owner goes, so no error path has
// to unwind MPI_Comm_free by hand.
//
// The one exception is a communicator that an abandoned collective may still use (after
// the watchdog failed it): Open MPI crashes when it progresses a request whose
// communicator was freed, so such communicators are given up with abandon() and left for
// MPI_Finalize to reclaim.
#pragma once

#include <mpi.h>

#include <utility>

namespace zrt {

class MpiComm {
 public:
  MpiComm() = default;
  // Takes ownership of comm (which may be MPI_COMM_NULL).
  explicit MpiComm(MPI_Comm comm) : comm_(comm) {}
  ~MpiComm() { reset(); }
  MpiComm(MpiComm &&other) noexcept : comm_(std::exchange(other.comm_, MPI_COMM_NULL)) {}
  MpiComm &operator=(MpiComm &&other) noexcept {
    if (this != &other) {
      reset();
      comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    }
    return *this;
  }
  MpiComm(const MpiComm &) = delete;
  MpiComm &operator=(const MpiComm &) = delete;

  // A duplicate of comm that returns errors instead of aborting (MPI_ERRORS_RETURN).
  // Collective over comm; throws Error(ZRT_ERR_MPI) naming `what`, or ZRT_ERR_TIMEOUT
  // past the deadline of comm's agreement watch (runtime/agreement_watch.hpp).
  static MpiComm dup(MPI_Comm comm, const char *what = "MPI_Comm_dup");
  // MPI_Comm_split of comm, with MPI_ERRORS_RETURN. Collective over comm.
  static MpiComm split(MPI_Comm comm, int color, int key, const char *what = "MPI_Comm_split");
  // MPI_Comm_split_type of comm, with MPI_ERRORS_RETURN. Collective over comm.
  static MpiComm split_type(MPI_Comm comm, int type, int key,
                            const char *what = "MPI_Comm_split_type");

  MPI_Comm get() const { return comm_; }
  operator MPI_Comm() const { return comm_; }  // NOLINT: used where MPI takes an MPI_Comm
  explicit operator bool() const { return comm_ != MPI_COMM_NULL; }

  // MPI_Comm_free now (a collective in the MPI standard's sense: every rank frees its
  // copy). Does nothing for MPI_COMM_NULL or once MPI is finalized.
  void reset() noexcept;
  // Gives the communicator up without freeing it: an abandoned MPI operation may still use
  // it, and MPI_Finalize reclaims it.
  void abandon() noexcept { comm_ = MPI_COMM_NULL; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace zrt
