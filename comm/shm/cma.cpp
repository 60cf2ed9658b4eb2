#include "comm/shm/cma.hpp"

#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "runtime/mpi_error.hpp"

namespace zrt {

namespace {

std::string errno_why(int err) {
  std::string why = std::strerror(err);
  switch (err) {
    case EPERM:
      why +=
          " (yama's kernel.yama.ptrace_scope, a seccomp filter or a container without "
          "CAP_SYS_PTRACE forbids it)";
      break;
    case ENOSYS:
      why += " (the kernel or a seccomp filter lacks process_vm_readv)";
      break;
    case ESRCH:
      why += " (no such process: are the ranks in different PID namespaces?)";
      break;
    default:
      break;
  }
  return why;
}

// The probe token a rank exposes: recognizable, so that reading some other process that
// happens to have the same pid (another PID namespace) is caught, not trusted.
constexpr int kTokenWords = 8;
void fill_token(uint64_t *token, uint64_t cookie, int rank, pid_t pid) {
  for (int i = 0; i < kTokenWords; ++i)
    token[i] = cookie * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(rank) * 1000003u +
               static_cast<uint64_t>(pid) * 31u + static_cast<uint64_t>(i);
}

}  // namespace

std::string cma_read(pid_t pid, const void *remote, void *local, size_t bytes) {
  char *to = static_cast<char *>(local);
  const char *from = static_cast<const char *>(remote);
  while (bytes > 0) {
    iovec l{to, bytes}, r{const_cast<char *>(from), bytes};
    ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return fmt::format("process_vm_readv of {} bytes from process {} failed: {}", bytes, pid,
                         errno_why(errno));
    }
    if (got == 0)
      return fmt::format("process_vm_readv from process {} read nothing ({} bytes left)", pid,
                         bytes);
    to += got;
    from += got;
    bytes -= static_cast<size_t>(got);
  }
  return {};
}

CmaProbe cma_probe(MPI_Comm comm) {
  int rank = 0, size = 1;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  // Under yama's ptrace_scope 1 only ancestors may attach: peers are siblings. Open MPI's
  // vader does the same; where yama is absent this fails harmlessly (EINVAL).
#ifdef PR_SET_PTRACER
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
  uint64_t cookie =
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  check_mpi(MPI_Bcast(&cookie, 1, MPI_UINT64_T, 0, comm), "MPI_Bcast(cma cookie)");
  const pid_t me = getpid();
  uint64_t token[kTokenWords];
  fill_token(token, cookie, rank, me);
  uint64_t mine[2] = {static_cast<uint64_t>(me), reinterpret_cast<uintptr_t>(token)};
  std::vector<uint64_t> all(2 * static_cast<size_t>(size));
  check_mpi(MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, comm),
            "MPI_Allgather(cma pids)");
  CmaProbe probe;
  probe.pids.resize(static_cast<size_t>(size));
  std::string why;
  for (int r = 0; r < size; ++r) {
    probe.pids[static_cast<size_t>(r)] = static_cast<pid_t>(all[2 * static_cast<size_t>(r)]);
    if (r == rank || !why.empty()) continue;
    uint64_t got[kTokenWords] = {}, want[kTokenWords];
    fill_token(want, cookie, r, probe.pids[static_cast<size_t>(r)]);
    std::string e = cma_read(probe.pids[static_cast<size_t>(r)],
                             reinterpret_cast<const void *>(all[2 * static_cast<size_t>(r) + 1]),
                             got, sizeof(got));
    if (!e.empty())
      why = fmt::format("rank {} reading rank {}: {}", rank, r, e);
    else if (std::memcmp(got, want, sizeof(got)) != 0)
      why = fmt::format(
          "rank {} reading rank {}: process {} is not that rank (different PID "
          "namespaces?)",
          rank, r, probe.pids[static_cast<size_t>(r)]);
  }
  // The lowest failing rank tells everyone why; the collective also keeps every token
  // alive until all peers have read it.
  int first = why.empty() ? size : rank;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm),
            "MPI_Allreduce(cma probe)");
  probe.works = first == size;
  if (!probe.works) {
    char text[512] = {};
    if (rank == first) std::snprintf(text, sizeof(text), "%s", why.c_str());
    check_mpi(MPI_Bcast(text, sizeof(text), MPI_CHAR, first, comm), "MPI_Bcast(cma why)");
    probe.why = text;
  }
  return probe;
}

}  // namespace zrt
