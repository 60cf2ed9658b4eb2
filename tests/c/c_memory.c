/* A C99 program on zerort/memory.h: pools, a movable buffer, stats, offload, an error. */
#include <stdio.h>
#include <string.h>
#include <zerort/zerort.h>

static int fail(const char *what) {
  fprintf(stderr, "c_memory: %s: %s\n", what, zrt_last_error_message());
  return 1;
}

int main(int argc, char **argv) {
  zrt_context_h ctx = NULL;
  zrt_pool_h pool = NULL;
  zrt_pool_params_t params;
  zrt_pool_stats_t stats;
  zrt_buffer_h buffer = NULL;
  zrt_offload_h engine = NULL;
  zrt_offload_params_t oparams;
  zrt_offload_token_h token = NULL;
  double in[1000], out[1000];
  void *raw = NULL, *p = NULL;
  size_t bytes = 0;
  int i;

  MPI_Init(&argc, &argv);
  if (zrt_init(MPI_COMM_WORLD, NULL, &ctx) != ZRT_SUCCESS) return fail("zrt_init");
  memset(&params, 0, sizeof params);
  params.field_mask = ZRT_POOL_PARAM_FIELD_LIMIT_BYTES | ZRT_POOL_PARAM_FIELD_NAME;
  params.limit_bytes = 16u << 20;
  params.name = "c";
  if (zrt_pool_create(ctx, &params, &pool) != ZRT_SUCCESS) return fail("zrt_pool_create");
  if (zrt_pool_alloc(pool, 1000, ZRT_LIFETIME_TRANSIENT, &raw) != ZRT_SUCCESS)
    return fail("zrt_pool_alloc");
  if (zrt_pool_alloc_movable(pool, 5000, ZRT_LIFETIME_LONG, &buffer) != ZRT_SUCCESS)
    return fail("zrt_pool_alloc_movable");
  if (zrt_pool_pointer(pool, buffer, &p, &bytes, NULL) != ZRT_SUCCESS || bytes != 5000)
    return fail("zrt_pool_pointer");
  memset(p, 7, bytes);
  if (zrt_pool_free(pool, raw) != ZRT_SUCCESS) return fail("zrt_pool_free");
  if (zrt_pool_free(pool, raw) != ZRT_ERR_INVALID_ARGUMENT) return fail("double free accepted");
  if (strstr(zrt_last_error_message(), "freed twice") == NULL) return fail("unclear message");
  memset(&stats, 0, sizeof stats);
  stats.field_mask = ZRT_POOL_STATS_FIELD_ALL;
  if (zrt_pool_stats(pool, &stats) != ZRT_SUCCESS) return fail("zrt_pool_stats");
  if (stats.allocations != 1 || stats.live_bytes < 5000 || stats.space != ZRT_MEMORY_HOST)
    return fail("wrong stats");

  memset(&oparams, 0, sizeof oparams);
  oparams.field_mask = ZRT_OFFLOAD_PARAM_FIELD_RING_BYTES;
  oparams.ring_bytes = 1u << 20;
  if (zrt_offload_create(ctx, &oparams, &engine) != ZRT_SUCCESS) return fail("zrt_offload_create");
  for (i = 0; i < 1000; ++i)
    in[i] = i * 0.5;
  if (zrt_offload_push(engine, in, sizeof in, &token) != ZRT_SUCCESS)
    return fail("zrt_offload_push");
  if (zrt_offload_prefetch(engine, token) != ZRT_SUCCESS) return fail("zrt_offload_prefetch");
  if (zrt_offload_fetch(engine, token, out) != ZRT_SUCCESS) return fail("zrt_offload_fetch");
  if (memcmp(in, out, sizeof in) != 0) return fail("offload changed the data");
  if (zrt_offload_destroy(engine) != ZRT_SUCCESS) return fail("zrt_offload_destroy");

  if (zrt_pool_free_movable(pool, buffer) != ZRT_SUCCESS) return fail("zrt_pool_free_movable");
  if (zrt_pool_destroy(pool) != ZRT_SUCCESS) return fail("zrt_pool_destroy");
  if (zrt_finalize(ctx) != ZRT_SUCCESS) return fail("zrt_finalize");
  MPI_Finalize();
  printf("c_memory: ok\n");
  return 0;
}
