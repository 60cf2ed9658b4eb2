/* A surrogate learned while a solver runs, in C with zerort/model.h (libzerort_nn, pkg-config
 * zerort-nn): the 2-D reaction-diffusion equation
 *     u_t = alpha (u_xx + u_yy) + k u (1 - u)
 * on the periodic unit square, N x N points, explicit finite differences, its rows split
 * among the ranks (halo rows exchanged with MPI). A first run with the exact reaction term
 * collects, at every point and step, the 5-point stencil and the term there; an MLP
 * (zrt_model, ZeRO stage 3, its parameters sharded over the ranks) trains on them, each rank
 * on its own points. A second run, from another initial state, takes the term from the
 * model (zrt_model_forward on every local point, each step) and is compared with the exact
 * solver. The same program as ../fortran/heat_surrogate.F90.
 *   heat_surrogate [CONFIG]   CONFIG: a model configuration file (default: the one below)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zerort/model.h>
#include <zerort/zerort.h>

#define N 32
#define COLLECT_STEPS 100
#define TRAIN_STEPS 1500
#define BATCH 256
#define RUN_STEPS 200

static const double alpha = 0.01, k = 1.0, dt = 0.01, h = 1.0 / N;
/* The model's output is the term scaled to [0, 1]: divided by scale * k (k u (1 - u) is
 * at most k / 4). */
static const double scale = 1.0 / 4;

static const char *default_config =
    "{\"model\": {\"input\": [5], \"layers\": ["
    "{\"type\": \"linear\", \"features\": 32}, {\"type\": \"tanh\"}, "
    "{\"type\": \"linear\", \"features\": 32}, {\"type\": \"tanh\"}, "
    "{\"type\": \"linear\", \"features\": 1}]}, "
    "\"loss\": {\"type\": \"mse\"}, \"seed\": 1, "
    "\"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 1e-2, \"weight_decay\": 0}}, "
    "\"lr_scheduler\": {\"type\": \"cosine_annealing\", \"parameters\": {\"T_max\": 1500}}, "
    "\"zero_optimization\": {\"stage\": 3}}";

#define CHECK(call)                                                                  \
  do {                                                                               \
    zrt_status_t st_ = (call);                                                       \
    if (st_ != ZRT_SUCCESS) {                                                        \
      fprintf(stderr, "%s: %s\n", zrt_status_string(st_), zrt_last_error_message()); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                  \
    }                                                                                \
  } while (0)

static int rank, ranks, m; /* m: this rank's rows; a field is (m + 2) x N, halo rows 0, m + 1 */

#define AT(u, j, i) ((u)[(size_t)(j)*N + (size_t)(i)])

static double *field(void) {
  double *u = calloc((size_t)(m + 2) * N, sizeof *u);
  if (u == NULL) {
    fprintf(stderr, "heat_surrogate: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return u;
}

/* Two initial states in [0.02, 0.98] (which = 1: the training run's). */
static void initial(double *u, int which) {
  const double pi = acos(-1.0);
  for (int j = 1; j <= m; ++j) {
    const double y = (rank * m + j - 1) * h;
    for (int i = 0; i < N; ++i) {
      const double x = i * h;
      AT(u, j, i) = which == 1 ? 0.5 + 0.48 * sin(2 * pi * x) * sin(2 * pi * y)
                               : 0.5 + 0.3 * cos(2 * pi * (x + y)) + 0.1 * sin(4 * pi * y);
    }
  }
}

/* The halo rows from the neighbouring ranks (periodic in y; one rank sends to itself). */
static void halo(double *u) {
  const int up = (rank + 1) % ranks, down = (rank + ranks - 1) % ranks;
  MPI_Sendrecv(&AT(u, m, 0), N, MPI_DOUBLE, up, 0, &AT(u, 0, 0), N, MPI_DOUBLE, down, 0,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Sendrecv(&AT(u, 1, 0), N, MPI_DOUBLE, down, 1, &AT(u, m + 1, 0), N, MPI_DOUBLE, up, 1,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* The 5-point stencil at (j, i): centre, west, east, south, north (periodic in x). */
static void stencil(const double *u, int j, int i, double v[5]) {
  v[0] = AT(u, j, i);
  v[1] = AT(u, j, (i + N - 1) % N);
  v[2] = AT(u, j, (i + 1) % N);
  v[3] = AT(u, j - 1, i);
  v[4] = AT(u, j + 1, i);
}

static double reaction(double u) {
  return k * u * (1 - u);
}

/* One explicit step (halo rows current) with, as the reaction term, the exact one (r NULL)
 * or r, one value a local point in units of scale * k (the model's output). */
static void advance(double *u, const float *r, double *next) {
  for (int j = 1; j <= m; ++j)
    for (int i = 0; i < N; ++i) {
      double v[5];
      stencil(u, j, i, v);
      const double term = r ? scale * k * r[(j - 1) * N + i] : reaction(v[0]);
      next[(j - 1) * N + i] =
          v[0] + dt * (alpha * (v[1] + v[2] + v[3] + v[4] - 4 * v[0]) / (h * h) + term);
    }
  memcpy(&AT(u, 1, 0), next, (size_t)m * N * sizeof *next);
}

static zrt_tensor_t tensor(float *data, int64_t batch, int64_t features) {
  zrt_tensor_t t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.dtype = ZRT_DTYPE_FP32;
  t.ndim = 2;
  t.shape[0] = batch;
  t.shape[1] = features;
  return t;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (N % ranks != 0) {
    if (rank == 0) fprintf(stderr, "heat_surrogate: the %d rows do not split evenly\n", N);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  m = N / ranks;
  zrt_context_h ctx;
  CHECK(zrt_init(MPI_COMM_WORLD, NULL, &ctx));
  zrt_model_h model;
  CHECK(zrt_model_create(ctx, argc > 1 ? argv[1] : default_config, &model));

  /* 1. The exact solver, collecting (stencil, term / scale) at every point and step. */
  double *exact = field(), *learned = field(), *none = field(), *next = field();
  const int samples = COLLECT_STEPS * N * m;
  float *xs = malloc((size_t)samples * 5 * sizeof *xs), *ys = malloc((size_t)samples * sizeof *ys);
  if (xs == NULL || ys == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  initial(exact, 1);
  int s = 0;
  for (int step = 0; step < COLLECT_STEPS; ++step) {
    halo(exact);
    for (int j = 1; j <= m; ++j)
      for (int i = 0; i < N; ++i, ++s) {
        double v[5];
        stencil(exact, j, i, v);
        for (int c = 0; c < 5; ++c)
          xs[(size_t)s * 5 + c] = (float)v[c];
        ys[s] = (float)(reaction(v[0]) / (scale * k));
      }
    advance(exact, NULL, next);
  }

  /* 2. Training: each rank's batch drawn from its own samples. */
  float xb[BATCH * 5], yb[BATCH];
  zrt_tensor_t input = tensor(xb, BATCH, 5), target = tensor(yb, BATCH, 1);
  uint64_t lcg = 12345 + (uint64_t)rank;
  double loss = 0;
  for (int step = 0; step < TRAIN_STEPS; ++step) {
    for (int b = 0; b < BATCH; ++b) {
      lcg = (lcg * 1103515245u + 12345u) % 2147483648u;
      const size_t pick = (size_t)((lcg / 16) % (uint64_t)samples);
      memcpy(&xb[b * 5], &xs[pick * 5], 5 * sizeof *xb);
      yb[b] = ys[pick];
    }
    CHECK(zrt_model_train_step(model, &input, &target, &loss));
  }
  if (rank == 0)
    printf("heat_surrogate: %d ranks, %d samples each, %d steps at ZeRO stage 3, loss %.2e\n",
           ranks, samples, TRAIN_STEPS, loss);

  /* 3. From another initial state: the exact term, the model's, and none at all. */
  float *sx = malloc((size_t)N * m * 5 * sizeof *sx), *sy = malloc((size_t)N * m * sizeof *sy);
  float *zero = calloc((size_t)N * m, sizeof *zero);
  if (sx == NULL || sy == NULL || zero == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  zrt_tensor_t points = tensor(sx, (int64_t)N * m, 5), terms = tensor(sy, (int64_t)N * m, 1);
  initial(exact, 2);
  memcpy(learned, exact, (size_t)(m + 2) * N * sizeof *exact);
  memcpy(none, exact, (size_t)(m + 2) * N * sizeof *exact);
  for (int step = 0; step < RUN_STEPS; ++step) {
    halo(exact);
    halo(learned);
    halo(none);
    for (int j = 1, p = 0; j <= m; ++j)
      for (int i = 0; i < N; ++i, ++p) {
        double v[5];
        stencil(learned, j, i, v);
        for (int c = 0; c < 5; ++c)
          sx[(size_t)p * 5 + c] = (float)v[c];
      }
    CHECK(zrt_model_forward(model, &points, &terms));
    advance(exact, NULL, next);
    advance(learned, sy, next);
    advance(none, zero, next);
  }
  double sums[3] = {0, 0, 0};
  for (int j = 1; j <= m; ++j)
    for (int i = 0; i < N; ++i) {
      const double e = AT(exact, j, i);
      sums[0] += (AT(learned, j, i) - e) * (AT(learned, j, i) - e);
      sums[1] += (AT(none, j, i) - e) * (AT(none, j, i) - e);
      sums[2] += e * e;
    }
  MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("surrogate error: %.2e relative (L2) after %d steps\n", sqrt(sums[0] / sums[2]),
           RUN_STEPS);
    printf("heat_surrogate: without the reaction term the error is %.2e (L2)\n",
           sqrt(sums[1] / sums[2]));
  }

  CHECK(zrt_model_destroy(model));
  CHECK(zrt_finalize(ctx));
  free(exact), free(learned), free(none), free(next);
  free(xs), free(ys), free(sx), free(sy), free(zero);
  MPI_Finalize();
  return 0;
}
