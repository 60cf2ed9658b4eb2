#include "runtime/agree.hpp"

#include <algorithm>
#include <climits>
#include <cstring>

#include <sched.h>

#include "runtime/mpi_error.hpp"

namespace zrt {

namespace {

// Waits for request, calling progress() between tests.
void wait_progressing(MPI_Request *request, const std::function<void()> &progress,
                      const char *what) {
  if (!progress) {
    check_mpi(MPI_Wait(request, MPI_STATUS_IGNORE), what);
    return;
  }
  for (;;) {
    int done = 0;
    check_mpi(MPI_Test(request, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    progress();
    sched_yield();
  }
}

}  // namespace

AgreedStatus agree_status(MPI_Comm comm, zrt_status_t local, const std::string &message,
                          const std::function<void()> &progress) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  bool failed = local != ZRT_SUCCESS && local != ZRT_IN_PROGRESS;
  int first = failed ? rank : INT_MAX;
  MPI_Request request;
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm, &request),
            "MPI_Iallreduce(agree on status)");
  wait_progressing(&request, progress, "MPI_Iallreduce(agree on status)");
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
  check_mpi(MPI_Ibcast(&packet, sizeof packet, MPI_BYTE, first, comm, &request),
            "MPI_Ibcast(agree on status)");
  wait_progressing(&request, progress, "MPI_Ibcast(agree on status)");
  out.status = static_cast<zrt_status_t>(packet.status);
  out.failed_rank = first;
  out.message = packet.text;
  return out;
}

}  // namespace zrt
