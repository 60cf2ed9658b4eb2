#include "runtime/agree.hpp"

#include <algorithm>
#include <climits>
#include <cstring>

#include <memory>

#include "runtime/agreement_watch.hpp"
#include "runtime/mpi_error.hpp"

namespace zrt {

namespace {

// What the failed rank tells the others, in one fixed-size message.
struct Packet {
  int status;
  char text[1020];
};

}  // namespace

AgreedStatus agree_status(MPI_Comm comm, zrt_status_t local, const std::string &message,
                          const std::function<void()> &progress) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  bool failed = local != ZRT_SUCCESS && local != ZRT_IN_PROGRESS;
  // On the heap: after a timeout MPI may still write into it (wait_watched buries it).
  std::unique_ptr<char[]> buffer(new char[sizeof(Packet)]());
  int *first = reinterpret_cast<int *>(buffer.get());
  *first = failed ? rank : INT_MAX;
  MPI_Request request;
  check_watched(comm, "agreement");
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, first, 1, MPI_INT, MPI_MIN, comm, &request),
            "MPI_Iallreduce(agreement on status)");
  wait_watched(comm, &request, "agreement", progress, buffer);
  AgreedStatus out;
  const int failed_rank = *first;
  if (failed_rank == INT_MAX) return out;

  Packet *packet = reinterpret_cast<Packet *>(buffer.get());
  *packet = Packet{};
  if (rank == failed_rank) {
    packet->status = static_cast<int>(local);
    size_t n = std::min(message.size(), sizeof packet->text - 1);
    std::memcpy(packet->text, message.data(), n);
  }
  check_mpi(MPI_Ibcast(packet, sizeof(Packet), MPI_BYTE, failed_rank, comm, &request),
            "MPI_Ibcast(agreement on status)");
  wait_watched(comm, &request, "agreement (the failed rank's message)", progress, buffer);
  out.status = static_cast<zrt_status_t>(packet->status);
  out.failed_rank = failed_rank;
  out.message = packet->text;
  return out;
}

void watched_bcast(MPI_Comm comm, void *data, size_t bytes, int root, const char *what) {
  if (bytes > static_cast<size_t>(INT_MAX))
    fail(ZRT_ERR_INVALID_ARGUMENT, "{}: {} bytes is more than one broadcast carries", what, bytes);
  std::unique_ptr<char[]> buffer(new char[std::max<size_t>(bytes, 1)]);
  std::memcpy(buffer.get(), data, bytes);
  MPI_Request request;
  check_watched(comm, what);
  check_mpi(MPI_Ibcast(buffer.get(), static_cast<int>(bytes), MPI_BYTE, root, comm, &request),
            what);
  wait_watched(comm, &request, what, {}, buffer);
  std::memcpy(data, buffer.get(), bytes);
}

namespace {

size_t type_bytes(MPI_Datatype type, const char *what) {
  int size = 0;
  check_mpi(MPI_Type_size(type, &size), what);
  return static_cast<size_t>(size);
}

}  // namespace

void watched_allreduce(MPI_Comm comm, void *data, int count, MPI_Datatype type, MPI_Op op,
                       const char *what) {
  const size_t bytes = static_cast<size_t>(count) * type_bytes(type, what);
  std::unique_ptr<char[]> buffer(new char[std::max<size_t>(bytes, 1)]);
  std::memcpy(buffer.get(), data, bytes);
  MPI_Request request;
  check_watched(comm, what);
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, buffer.get(), count, type, op, comm, &request), what);
  wait_watched(comm, &request, what, {}, buffer);
  std::memcpy(data, buffer.get(), bytes);
}

void watched_allgather(MPI_Comm comm, const void *mine, int count, MPI_Datatype type, void *all,
                       const char *what) {
  int size = 1;
  check_mpi(MPI_Comm_size(comm, &size), what);
  const size_t bytes = static_cast<size_t>(count) * type_bytes(type, what);
  // One buffer for both halves: what this rank sends, then what it receives.
  std::unique_ptr<char[]> buffer(new char[std::max<size_t>(bytes * (1 + size), 1)]);
  std::memcpy(buffer.get(), mine, bytes);
  MPI_Request request;
  check_watched(comm, what);
  check_mpi(
      MPI_Iallgather(buffer.get(), count, type, buffer.get() + bytes, count, type, comm, &request),
      what);
  wait_watched(comm, &request, what, {}, buffer);
  std::memcpy(all, buffer.get() + bytes, bytes * static_cast<size_t>(size));
}

void watched_barrier(MPI_Comm comm, const char *what) {
  std::unique_ptr<char[]> no_buffer;
  MPI_Request request;
  check_watched(comm, what);
  check_mpi(MPI_Ibarrier(comm, &request), what);
  wait_watched(comm, &request, what, {}, no_buffer);
}

}  // namespace zrt
