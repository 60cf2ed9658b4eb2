#include "runtime/mpi_comm.hpp"

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
  MPI_Comm out = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(comm, &out), what);
  return returning_errors(out);
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
