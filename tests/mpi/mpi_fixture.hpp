// Shared by the MPI test binaries: one zerort context for the whole process, created in
// main after MPI_Init, and helpers that keep ranks in step.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>
#include <zerort/zerort.h>

#include <string>

namespace test {

zrt_context_h context();
zrt_comm_h world();
int rank();
int size();

inline std::string last_error() {
  return zrt_last_error_message();
}

// True on every rank when the condition holds on every rank.
inline bool all_ranks(bool ok) {
  int v = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return v == 1;
}

}  // namespace test
