#include "runtime/mpi_comm.hpp"

#include <memory>

#include "runtime/agreement_watch.hpp"
#include "runtime/mpi_error.hpp"

namespace zrt {

namespace {

MpiComm returning_errors(MPI_Comm comm) {
  MpiComm owned(comm);
  if (owned) MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  return owned;
}

}  // namespace

MpiComm MpiComm::dup(MPI_Comm comm, const char *what) {
  // Nonblocking, so that a rank that never arrives is named by comm's agreement watch
  // instead of leaving this one in MPI_Comm_dup for ever. MPI writes the new handle when
  // the duplicate completes, so it lives on the heap (buried if that never happens here).
  std::unique_ptr<char[]> buffer(new char[sizeof(MPI_Comm)]);
  MPI_Comm *out = reinterpret_cast<MPI_Comm *>(buffer.get());
  *out = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;
  check_watched(comm, what);
  check_mpi(MPI_Comm_idup(comm, out, &request), what);
  wait_watched(comm, &request, what, {}, buffer);
  return returning_errors(*out);
}

MpiComm MpiComm::split(MPI_Comm comm, int color, int key, const char *what) {
  MPI_Comm out = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(comm, color, key, &out), what);
  return returning_errors(out);
}

MpiComm MpiComm::split_type(MPI_Comm comm, int type, int key, const char *what) {
  MPI_Comm out = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, type, key, MPI_INFO_NULL, &out), what);
  return returning_errors(out);
}

void MpiComm::reset() noexcept {
  if (comm_ == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
}

}  // namespace zrt
