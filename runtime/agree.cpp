#include "runtime/agree.hpp"

#include <algorithm>
#include <climits>
#include <cstring>

#include "runtime/mpi_error.hpp"

namespace zrt {

AgreedStatus agree_status(MPI_Comm comm, zrt_status_t local, const std::string &message) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  bool failed = local != ZRT_SUCCESS && local != ZRT_IN_PROGRESS;
  int first = failed ? rank : INT_MAX;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm),
            "MPI_Allreduce(agree on status)");
  AgreedStatus out;
  if (first == INT_MAX) return out;

  // The failed rank tells the others what went wrong, in one fixed-size message.
  struct {
    int status;
    char text[1020];
  } packet{};
  if (rank == first) {
    packet.status = static_cast<int>(local);
    size_t n = std::min(message.size(), sizeof packet.text - 1);
    std::memcpy(packet.text, message.data(), n);
  }
  check_mpi(MPI_Bcast(&packet, sizeof packet, MPI_BYTE, first, comm), "MPI_Bcast(agree on status)");
  out.status = static_cast<zrt_status_t>(packet.status);
  out.failed_rank = first;
  out.message = packet.text;
  return out;
}

}  // namespace zrt
