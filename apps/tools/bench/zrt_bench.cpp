// zrt-bench: zerort's benchmarks. Every figure is printed next to a baseline measured in
// the same process (Open MPI's own collective, malloc, a scalar loop), as a ratio.
//
//   mpirun -np 2 zrt-bench comm [--json] [--max-bytes 64M]
//   zrt-bench pool [--json]       (the pool against glibc malloc and jemalloc)
//   zrt-bench offload [--json]    (activation offload against memcpy)
//   zrt-bench adam [--params 1e8]
//   mpirun -np 2 zrt-bench zero [--layers 12 --width 1024]
//   mpirun -np 2 zrt-bench ckpt [--dir /tmp --stage 2]
//   mpirun -np 2 zrt-bench gpt2 [--json]        (built with Kokkos)
//   mpirun -np 2 zrt-bench bert [--json]        (built with Kokkos)
#include <mpi.h>
#include <CLI/CLI.hpp>

#include "bench_adam.hpp"
#include "bench_ckpt.hpp"
#include "bench_comm.hpp"
#include "bench_offload.hpp"
#include "bench_pool.hpp"
#include "bench_zero.hpp"
#ifdef BENCH_WITH_MODELS
#include "bench_bert.hpp"
#include "bench_gpt2.hpp"
#endif

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  CLI::App app{"zrt-bench: zerort benchmarks, each against a baseline in the same run"};
  app.require_subcommand(1);
  add_comm_bench(app);
  add_pool_bench(app);
  add_offload_bench(app);
  add_adam_bench(app);
  add_zero_bench(app);
  add_ckpt_bench(app);
#ifdef BENCH_WITH_MODELS
  add_gpt2_bench(app);  // needs Kokkos
  add_bert_bench(app);
#endif
  int rc = 0;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    rc = rank == 0 ? app.exit(e) : (e.get_exit_code());
  }
  MPI_Finalize();
  return rc;
}
