/* One training job of the fault suite (run_fault_suite.py): a small model on zerort's
 * engine through the public C API, in C99, with one fault injected on one rank.
 *   fault_job MODE [--victim R] [--at STEP] [--steps N] [--dtype fp32|bf16|fp16]
 *             [--save DIR] [--load FILE]
 * Modes:
 *   none             train; every rank prints "rank R: done"
 *   init-stop        the victim stops itself (SIGSTOP) just before zrt_init
 *   init-kill        the victim kills itself (SIGKILL) just before zrt_init, as a rank that
 *                    crashed in MPI's start-up under a launcher that keeps the others
 *   step-stop        the victim stops itself (SIGSTOP) just before zrt_engine_step
 *   save-stop        the victim stops itself just before zrt_checkpoint_save (DIR/ckpt.h5)
 *   async-save-stop  every rank starts zrt_checkpoint_save_post, then the victim stops
 *                    before zrt_request_wait while the others wait for the save
 *   commit-stop      the victim stops itself just before zrt_engine_commit
 *   collective-stop  the victim stops itself just before a zrt_comm_all_reduce
 *   destroy-early    the victim destroys its engine and finalizes at step --at, as a program
 *                    that hit an error of its own does, while the others step
 *   kill             the victim kills itself (SIGKILL) just before zrt_engine_step
 *   register-fail    the victim registers a parameter with a zero extent, then destroys
 *                    its engine as a program does on an error; the others commit
 *   nan              the victim writes a NaN into its gradient at step --at: every rank
 *                    checks that the step is skipped and leaves parameters unchanged, and
 *                    saves checkpoints before and after it (DIR/before.h5, DIR/after.h5)
 *   save-loop        a larger model saved to DIR/ckpt.h5 after each of --steps steps (the
 *                    suite kills it at random moments)
 *   disk-full        saves DIR/good.h5, then DIR/full.h5 under a 64 KiB file size limit
 *                    (RLIMIT_FSIZE: "File too large"), then DIR/full.h5 again without it
 * A rank whose call fails prints "rank R: FAILED <status>: <message>", then releases its
 * engine and context as any program does on an error (printing "rank R: released in S s"
 * with what zrt_engine_destroy and zrt_finalize returned). When zrt_finalize says the
 * ranks are out of step (after a timeout), or zrt_init timed out (a rank never came), it
 * ends the job with MPI_Abort, as a program must; otherwise every rank failed alike and it
 * exits 2. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <zerort/zerort.h>

#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static int g_rank = 0;
static zrt_context_h g_ctx = NULL;
static zrt_engine_h g_engine = NULL;

static void failed(zrt_status_t st, const char *what) {
  printf("rank %d: FAILED %s: %s: %s\n", g_rank, zrt_status_string(st), what,
         zrt_last_error_message());
  fflush(stdout);
  /* What a program does on any error: release zerort's objects (as destructors would
   * while an exception unwinds), then end. After a timeout the ranks are out of step: the
   * releases must not wait for them, and zrt_finalize says so. */
  double start = MPI_Wtime();
  zrt_status_t destroyed = g_engine != NULL ? zrt_engine_destroy(g_engine) : ZRT_SUCCESS;
  zrt_status_t finalized = g_ctx != NULL ? zrt_finalize(g_ctx) : ZRT_SUCCESS;
  printf("rank %d: released in %.1f s (zrt_engine_destroy: %s, zrt_finalize: %s%s%s)\n", g_rank,
         MPI_Wtime() - start, zrt_status_string(destroyed), zrt_status_string(finalized),
         finalized == ZRT_SUCCESS ? "" : ": ",
         finalized == ZRT_SUCCESS ? "" : zrt_last_error_message());
  fflush(stdout);
  if (finalized != ZRT_SUCCESS || (g_ctx == NULL && st == ZRT_ERR_TIMEOUT)) {
    sleep(1); /* let the other survivors print theirs */
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  /* Every rank failed alike (the error was agreed): end together. */
  MPI_Finalize();
  exit(2);
}

/* Stops this process as a debugger, a hung node or a `kill -STOP` would, saying so first. */
static void stop_here(void) {
  printf("rank %d: stopping itself (SIGSTOP)\n", g_rank);
  fflush(stdout);
  raise(SIGSTOP);
}

#define CALL(call)                              \
  do {                                          \
    zrt_status_t st_ = (call);                  \
    if (st_ != ZRT_SUCCESS) failed(st_, #call); \
  } while (0)

typedef struct {
  const char *mode;
  int victim;
  int at;
  int steps;
  const char *dtype;
  const char *save;
  const char *load; /* a checkpoint to continue from, after the commit */
} options_t;

static options_t parse(int argc, char **argv) {
  options_t o = {"none", 1, 3, 6, "fp32", "", ""};
  if (argc > 1) o.mode = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if (strcmp(k, "--victim") == 0)
      o.victim = atoi(v);
    else if (strcmp(k, "--at") == 0)
      o.at = atoi(v);
    else if (strcmp(k, "--steps") == 0)
      o.steps = atoi(v);
    else if (strcmp(k, "--dtype") == 0)
      o.dtype = v;
    else if (strcmp(k, "--save") == 0)
      o.save = v;
    else if (strcmp(k, "--load") == 0)
      o.load = v;
  }
  return o;
}

static int is(const options_t *o, const char *mode) {
  return strcmp(o->mode, mode) == 0;
}

/* 16-bit gradients hold the bits of a float's upper half (bf16) or IEEE half (fp16); only
 * the NaN and a few small values are ever written. */
static uint16_t half_bits(float x, zrt_dtype_t dtype) {
  if (isnan(x)) return dtype == ZRT_DTYPE_BF16 ? 0x7fc0 : 0x7e00;
  if (dtype == ZRT_DTYPE_BF16) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return (uint16_t)(u >> 16);
  }
  /* fp16 of |x| < 1 in steps of 1/1024 is enough for these gradients. */
  const int m = (int)(fabsf(x) * 1024.0f);
  uint16_t h = 0;
  if (m > 0) {
    int e = 0;
    float f = frexpf(fabsf(x), &e); /* x = f * 2^e, f in [0.5, 1) */
    const int exponent = e - 1 + 15;
    const int mantissa = (int)((f * 2 - 1) * 1024.0f);
    h = (uint16_t)((exponent << 10) | (mantissa & 0x3ff));
  }
  return x < 0 ? (uint16_t)(h | 0x8000) : h;
}

static void write_grad(void *grad, zrt_dtype_t dtype, size_t i, float value) {
  if (dtype == ZRT_DTYPE_FP32)
    ((float *)grad)[i] = value;
  else
    ((uint16_t *)grad)[i] = half_bits(value, dtype);
}

static void path_in(char *out, size_t size, const char *dir, const char *name) {
  snprintf(out, size, "%s/%s", dir, name);
}

/* Copies both parameters' values into out (numel[0] + numel[1] floats). */
static void get_params(zrt_param_h params[2], const size_t numel[2], float *out) {
  CALL(zrt_param_get(g_engine, params[0], out, ZRT_DTYPE_FP32));
  CALL(zrt_param_get(g_engine, params[1], out + numel[0], ZRT_DTYPE_FP32));
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  const options_t o = parse(argc, argv);
  const int victim = g_rank == o.victim;
  char path[4096];

  if (victim && is(&o, "init-stop")) stop_here();
  if (victim && is(&o, "init-kill")) raise(SIGKILL);
  CALL(zrt_init(MPI_COMM_WORLD, NULL, &g_ctx));

  zrt_engine_params_t ep;
  memset(&ep, 0, sizeof ep);
  ep.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE | ZRT_ENGINE_PARAM_FIELD_COMPUTE_DTYPE |
                  ZRT_ENGINE_PARAM_FIELD_LR | ZRT_ENGINE_PARAM_FIELD_REDUCE_BUCKET_BYTES;
  ep.stage = 2;
  ep.compute_dtype = strcmp(o.dtype, "bf16") == 0   ? ZRT_DTYPE_BF16
                     : strcmp(o.dtype, "fp16") == 0 ? ZRT_DTYPE_FP16
                                                    : ZRT_DTYPE_FP32;
  ep.lr = 1e-2;
  ep.reduce_bucket_bytes = 16 << 10;
  CALL(zrt_engine_create(g_ctx, &ep, &g_engine));

  const int big = is(&o, "save-loop") || is(&o, "save-stop") || is(&o, "async-save-stop");
  const int64_t rows = big ? 1024 : 64;
  const int64_t shapes[2][2] = {{rows, 96}, {96, 1}};
  zrt_param_h params[2] = {NULL, NULL};
  for (int p = 0; p < 2; ++p) {
    int64_t shape[2] = {shapes[p][0], shapes[p][1]};
    if (is(&o, "register-fail") && victim && p == 1) shape[0] = 0;
    char name[8];
    snprintf(name, sizeof name, "w%d", p);
    zrt_status_t st = zrt_param_register(g_engine, name, ep.compute_dtype, 2, shape, &params[p]);
    if (st != ZRT_SUCCESS) {
      /* What a program does on an error: report it, clean up, leave. */
      printf("rank %d: zrt_param_register failed here: %s\n", g_rank, zrt_last_error_message());
      fflush(stdout);
      zrt_engine_destroy(g_engine);
      zrt_finalize(g_ctx);
      MPI_Finalize();
      return 2;
    }
  }
  if (is(&o, "commit-stop") && victim) stop_here();
  CALL(zrt_engine_commit(g_engine));
  if (o.load[0] != '\0') {
    CALL(zrt_checkpoint_load(g_engine, o.load));
    printf("rank %d: resumed from %s\n", g_rank, o.load);
  }
  const zrt_dtype_t dtype = ep.compute_dtype;
  const size_t numel[2] = {(size_t)(rows * 96), 96};
  float *before = malloc((numel[0] + numel[1]) * sizeof(float));
  float *after = malloc((numel[0] + numel[1]) * sizeof(float));

  zrt_comm_h comm = NULL;
  CALL(zrt_context_comm(g_ctx, &comm));
  for (int step = 1; step <= o.steps; ++step) {
    const int at = step == o.at;
    if (is(&o, "nan") && at) {
      get_params(params, numel, before);
      if (o.save[0] != '\0') {
        path_in(path, sizeof path, o.save, "before.h5");
        CALL(zrt_checkpoint_save(g_engine, path, NULL));
      }
    }
    if (is(&o, "destroy-early") && at && victim) {
      /* An error of this rank's own: it releases everything and leaves (failed() destroys
       * the engine and finalizes) while the others step. */
      failed(ZRT_ERR_INVALID_STATE, "an error of this rank's own, injected at this step");
    }
    for (int p = 0; p < 2; ++p) {
      void *grad = NULL;
      CALL(zrt_param_grad_data(g_engine, params[p], &grad));
      for (size_t i = 0; i < numel[p]; ++i)
        write_grad(grad, dtype, i,
                   0.01f * (float)((i + (size_t)step + (size_t)g_rank) % 17) - 0.08f);
      if (is(&o, "nan") && victim && at && p == 1) write_grad(grad, dtype, 5, NAN);
      CALL(zrt_param_grad_ready(g_engine, params[p]));
    }
    if (at && victim) {
      if (is(&o, "step-stop")) stop_here();
      if (is(&o, "kill")) raise(SIGKILL);
    }
    zrt_step_report_t report;
    memset(&report, 0, sizeof report);
    report.field_mask = ZRT_STEP_REPORT_FIELD_ALL;
    CALL(zrt_engine_step(g_engine, &report));
    if (is(&o, "collective-stop") && at) {
      if (victim) stop_here();
      float x[8] = {1, 1, 1, 1, 1, 1, 1, 1};
      CALL(zrt_comm_all_reduce(comm, x, x, 8, ZRT_DTYPE_FP32, ZRT_OP_SUM));
    }
    if (is(&o, "save-loop") || (is(&o, "save-stop") && at)) {
      if (is(&o, "save-stop") && victim) stop_here();
      path_in(path, sizeof path, o.save, "ckpt.h5");
      CALL(zrt_checkpoint_save(g_engine, path, NULL));
      printf("rank %d: saved step %d\n", g_rank, step);
      fflush(stdout);
    }
    if (is(&o, "async-save-stop") && at) {
      zrt_request_h request = NULL;
      path_in(path, sizeof path, o.save, "ckpt.h5");
      CALL(zrt_checkpoint_save_post(g_engine, path, NULL, &request));
      if (victim) stop_here();
      CALL(zrt_request_wait(request));
      CALL(zrt_request_free(request));
    }
    if (is(&o, "disk-full") && at) {
      path_in(path, sizeof path, o.save, "good.h5");
      CALL(zrt_checkpoint_save(g_engine, path, NULL));
      /* Past the limit a write fails with EFBIG instead of raising SIGXFSZ. */
      signal(SIGXFSZ, SIG_IGN);
      struct rlimit limit = {64 << 10, RLIM_INFINITY};
      setrlimit(RLIMIT_FSIZE, &limit);
      path_in(path, sizeof path, o.save, "full.h5");
      zrt_status_t st = zrt_checkpoint_save(g_engine, path, NULL);
      printf("rank %d: save under the limit: %s: %s\n", g_rank, zrt_status_string(st),
             st == ZRT_SUCCESS ? "" : zrt_last_error_message());
      limit.rlim_cur = RLIM_INFINITY;
      setrlimit(RLIMIT_FSIZE, &limit);
      CALL(zrt_checkpoint_save(g_engine, path, NULL));
      printf("rank %d: saved again without the limit\n", g_rank);
    }
    if (is(&o, "nan") && at) {
      get_params(params, numel, after);
      const int same = memcmp(before, after, (numel[0] + numel[1]) * sizeof(float)) == 0;
      printf(
          "rank %d: step %d skipped %d (skipped so far %lld), grad_norm %g, "
          "parameters unchanged %s\n",
          g_rank, step, report.skipped, (long long)report.skipped_steps, report.grad_norm,
          same ? "yes" : "no");
      if (o.save[0] != '\0') {
        path_in(path, sizeof path, o.save, "after.h5");
        CALL(zrt_checkpoint_save(g_engine, path, NULL));
      }
    }
  }
  free(before);
  free(after);
  printf("rank %d: done\n", g_rank);
  zrt_engine_h engine = g_engine;
  g_engine = NULL;
  CALL(zrt_engine_destroy(engine));
  zrt_context_h ctx = g_ctx;
  g_ctx = NULL;
  CALL(zrt_finalize(ctx));
  MPI_Finalize();
  return 0;
}
