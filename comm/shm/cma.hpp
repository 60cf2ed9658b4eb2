// Cross Memory Attach: reading another process's memory with process_vm_readv(2), the
// single-copy transport of the shm backend for large buffers (Open MPI's vader/sm BTL and
// MPICH use it the same way). The kernel copies straight from the peer's pages into ours,
// so a byte moves once instead of twice through a shared slot.
//
// The kernel allows it only where this process may ptrace the peer: same user, and yama's
// ptrace_scope (or a seccomp filter, or a container without CAP_SYS_PTRACE) may forbid it.
// cma_probe finds out at setup, collectively, whether it works between a node's ranks.
#pragma once

#include <mpi.h>
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

namespace zrt {

struct CmaProbe {
  bool works = false;       // every rank read every peer's probe buffer correctly
  std::string why;          // when not: the first failing rank's reason, for a warning
  std::vector<pid_t> pids;  // per rank of comm
};

// Collective over comm (ranks sharing a node): exchanges process ids, lets peers attach
// (PR_SET_PTRACER_ANY under yama's ptrace_scope 1, as Open MPI does), and has every rank
// read a small token from every peer. Every rank returns the same `works`.
CmaProbe cma_probe(MPI_Comm comm);

// Copies bytes from address `remote` of process pid to `local`, looping over partial
// reads. Returns an empty string on success, else why it failed (errno's text and a hint).
// Local, blocking.
std::string cma_read(pid_t pid, const void *remote, void *local, size_t bytes);

}  // namespace zrt
