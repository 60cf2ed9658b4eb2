// A program that never calls MPI_Init: zrt_init initializes MPI, the collectives work, and
// zrt_finalize finalizes it. Afterwards zrt_init reports that MPI is gone.
#include <mpi.h>
#include <zerort/zerort.h>

#include <cstdio>
#include <cstring>

#define CHECK(cond)                                                                          \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, \
                   #cond, zrt_last_error_message());                                         \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)

int main() {
  int flag = 1;
  MPI_Initialized(&flag);
  CHECK(flag == 0);
  zrt_context_h ctx = nullptr;
  CHECK(zrt_init(MPI_COMM_WORLD, nullptr, &ctx) == ZRT_SUCCESS);
  MPI_Initialized(&flag);
  CHECK(flag == 1);
  zrt_comm_h comm = nullptr;
  CHECK(zrt_context_comm(ctx, &comm) == ZRT_SUCCESS);
  int size = 0;
  zrt_comm_size(comm, &size);
  float one = 1.0f, sum = 0.0f;
  CHECK(zrt_comm_all_reduce(comm, &one, &sum, 1, ZRT_DTYPE_FP32, ZRT_OP_SUM) == ZRT_SUCCESS);
  CHECK(sum == static_cast<float>(size));
  // A second context keeps MPI alive when the first goes.
  zrt_context_h second = nullptr;
  CHECK(zrt_init(MPI_COMM_WORLD, nullptr, &second) == ZRT_SUCCESS);
  CHECK(zrt_finalize(ctx) == ZRT_SUCCESS);
  MPI_Finalized(&flag);
  CHECK(flag == 0);
  CHECK(zrt_finalize(second) == ZRT_SUCCESS);
  MPI_Finalized(&flag);
  CHECK(flag == 1);
  CHECK(zrt_init(MPI_COMM_WORLD, nullptr, &ctx) == ZRT_ERR_INVALID_STATE);
  CHECK(std::strstr(zrt_last_error_message(), "already been finalized") != nullptr);
  std::printf("ok\n");
  return 0;
}
