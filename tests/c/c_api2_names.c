/* The names of API 2 still compile and work under API 3 (deprecated, for one version):
 * the collectives without their zrt_comm_ prefix, called here with the deprecation warning
 * silenced; the test api2_names_warn checks that the warning names the new call. */
#include <stdio.h>
#include <zerort/zerort.h>

static int fail(const char *what) {
  fprintf(stderr, "c_api2_names: %s: %s\n", what, zrt_last_error_message());
  return 1;
}

int main(int argc, char **argv) {
  zrt_context_h ctx = NULL;
  zrt_comm_h comm = NULL;
  zrt_request_h request = NULL;
  double x = 1.0, y = 0.0, z = 0.0;
  int size = 0;

  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (zrt_init(MPI_COMM_WORLD, NULL, &ctx) != ZRT_SUCCESS) return fail("zrt_init");
  if (zrt_context_comm(ctx, &comm) != ZRT_SUCCESS) return fail("zrt_context_comm");
  if (zrt_all_reduce(comm, &x, &y, 1, ZRT_DTYPE_FP64, ZRT_OP_SUM) != ZRT_SUCCESS)
    return fail("zrt_all_reduce");
  if (zrt_all_reduce_post(comm, &x, &z, 1, ZRT_DTYPE_FP64, ZRT_OP_SUM, &request) != ZRT_SUCCESS)
    return fail("zrt_all_reduce_post");
  if (zrt_request_wait(request) != ZRT_SUCCESS || zrt_request_free(request) != ZRT_SUCCESS)
    return fail("the request of zrt_all_reduce_post");
  if (y != (double)size || z != (double)size) return fail("wrong all-reduce result");
  if (zrt_finalize(ctx) != ZRT_SUCCESS) return fail("zrt_finalize");
  MPI_Finalize();
  printf("c_api2_names: ok on %d ranks\n", size);
  return 0;
}
