// The zerort context the apps' MPI tests share (mpi_kokkos_main.cpp: MPI, then Kokkos, then
// one context over MPI_COMM_WORLD for the whole test program), and this rank's place in it.
#pragma once

#include <zerort/zerort.h>

namespace apps_test {

zrt_context_h context();
zrt_comm_h comm();  // the context's communicator
int rank();
int size();

}  // namespace apps_test
