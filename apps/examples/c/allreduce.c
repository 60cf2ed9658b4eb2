/* zerort from C, built against an installed prefix with pkg-config (see Makefile):
 * init over MPI_COMM_WORLD, an all-reduce, a block from the host pool, finalize. */
#include <stdio.h>
#include <zerort/zerort.h>

#define CHECK(call)                                                                  \
  do {                                                                               \
    zrt_status_t st_ = (call);                                                       \
    if (st_ != ZRT_SUCCESS) {                                                        \
      fprintf(stderr, "%s: %s\n", zrt_status_string(st_), zrt_last_error_message()); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                  \
    }                                                                                \
  } while (0)

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  zrt_context_h ctx;
  CHECK(zrt_init(MPI_COMM_WORLD, NULL, &ctx));
  zrt_comm_h comm;
  CHECK(zrt_context_comm(ctx, &comm));
  int rank, size;
  CHECK(zrt_comm_rank(comm, &rank));
  CHECK(zrt_comm_size(comm, &size));

  float x[4] = {1, 2, 3, 4};
  CHECK(zrt_comm_all_reduce(comm, x, x, 4, ZRT_DTYPE_FP32, ZRT_OP_SUM));
  zrt_pool_h pool;
  CHECK(zrt_context_pool(ctx, ZRT_MEMORY_HOST, &pool));
  void *block;
  CHECK(zrt_pool_alloc(pool, 1 << 20, ZRT_LIFETIME_TRANSIENT, &block));
  CHECK(zrt_pool_free(pool, block));
  const char *backend;
  CHECK(zrt_comm_backend(comm, &backend));
  if (rank == 0)
    printf("allreduce: %d ranks, backend %s, sum %g %g %g %g\n", size, backend, x[0], x[1], x[2],
           x[3]);
  CHECK(zrt_finalize(ctx));
  MPI_Finalize();
  return 0;
}
