/* A rank that dies between MPI_Init and zrt_init, for the multinode tests' "startcrash"
 * case: preloaded (LD_PRELOAD) into every task, it makes the task whose SLURM_PROCID is
 * $DIE_BEFORE_ZRT_INIT raise SIGSEGV in zrt_init's first MPI call (MPI_Comm_test_inter),
 * as a rank that crashed at the end of Open MPI's start-up would die; every other call
 * goes to the real MPI function. It links no MPI library itself (only its header), so
 * srun, which loads it too, is left alone. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

typedef int (*test_inter_fn)(MPI_Comm comm, int *flag);

int MPI_Comm_test_inter(MPI_Comm comm, int *flag) {
  const char *victim = getenv("DIE_BEFORE_ZRT_INIT");
  const char *rank = getenv("SLURM_PROCID");
  if (victim != NULL && rank != NULL && strcmp(victim, rank) == 0) raise(SIGSEGV);
  test_inter_fn real = (test_inter_fn)dlsym(RTLD_NEXT, "MPI_Comm_test_inter");
  return real(comm, flag);
}
