/* A C99 program on the public API: init, a collective, the error path, finalize. */
#include <stdio.h>
#include <string.h>
#include <zerort/zerort.h>

static int fail(const char *what) {
  fprintf(stderr, "c_init_finalize: %s: %s\n", what, zrt_last_error_message());
  return 1;
}

int main(int argc, char **argv) {
  zrt_context_h ctx = NULL;
  zrt_comm_h comm = NULL;
  zrt_init_params_t params;
  zrt_context_attr_t attr;
  float x[3] = {1.0f, 2.0f, 3.0f}, y[3] = {0.0f, 0.0f, 0.0f};
  int size = 0;

  MPI_Init(&argc, &argv);
  memset(&params, 0, sizeof params);
  params.field_mask = ZRT_INIT_PARAM_FIELD_LOG_LEVEL;
  params.log_level = ZRT_LOG_WARN;
  if (zrt_init(MPI_COMM_WORLD, &params, &ctx) != ZRT_SUCCESS) return fail("zrt_init");
  if (zrt_context_comm(ctx, &comm) != ZRT_SUCCESS) return fail("zrt_context_comm");
  memset(&attr, 0, sizeof attr);
  attr.field_mask = ZRT_CONTEXT_ATTR_FIELD_SIZE;
  if (zrt_context_query(ctx, &attr) != ZRT_SUCCESS) return fail("zrt_context_query");
  size = attr.size;
  if (zrt_comm_all_reduce(comm, x, y, 3, ZRT_DTYPE_FP32, ZRT_OP_SUM) != ZRT_SUCCESS)
    return fail("zrt_comm_all_reduce");
  if (y[2] != 3.0f * (float)size) return fail("wrong all-reduce result");
  if (zrt_comm_rank(NULL, &size) != ZRT_ERR_INVALID_HANDLE) return fail("NULL handle accepted");
  if (strstr(zrt_last_error_message(), "NULL") == NULL) return fail("unclear message");
  if (zrt_finalize(ctx) != ZRT_SUCCESS) return fail("zrt_finalize");
  MPI_Finalize();
  printf("c_init_finalize: ok on %d ranks (%s)\n", size, zrt_status_string(ZRT_SUCCESS));
  return 0;
}
