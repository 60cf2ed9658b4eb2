/* The C API of configured models (zerort/model.h) from C99, on 2 ranks: training lowers the
 * loss; a bad argument on one rank fails the call on both (naming that rank) and leaves the
 * model usable; bad configurations name the nearest key; the external loss's two calls keep
 * their order; a checkpoint of other layers is refused and changes nothing. */
#include <mpi.h>
#include <zerort/model.h>
#include <zerort/zerort.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;
static int rank = 0;

#define EXPECT(cond, ...)                                               \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "rank %d: FAILED %s: ", rank, #cond);             \
      fprintf(stderr, __VA_ARGS__);                                     \
      fprintf(stderr, " (last error: %s)\n", zrt_last_error_message()); \
      ++failures;                                                       \
    }                                                                   \
  } while (0)

static const char *kMlp =
    "{\"model\": {\"input\": [3], \"layers\": [{\"type\": \"linear\", \"features\": 8},"
    " {\"type\": \"relu\"}, {\"type\": \"linear\", \"features\": 2}]},"
    " \"loss\": {\"type\": \"mse\"}, \"seed\": 7,"
    " \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 0.02}},"
    " \"zero_optimization\": {\"stage\": 3}}";

static zrt_tensor_t tensor2(float *data, int64_t rows, int64_t cols) {
  zrt_tensor_t t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.dtype = ZRT_DTYPE_FP32;
  t.ndim = 2;
  t.shape[0] = rows;
  t.shape[1] = cols;
  return t;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  zrt_context_h ctx = NULL;
  if (zrt_init(MPI_COMM_WORLD, NULL, &ctx) != ZRT_SUCCESS) {
    fprintf(stderr, "zrt_init: %s\n", zrt_last_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  /* Data: y = (x0 + x1, x1 - x2), each rank its own 16 samples. */
  float x[16 * 4], y[16 * 2], out[16 * 2];
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 3; ++j)
      x[i * 3 + j] = (float)sin(0.7 * (i + 16 * rank) + j);
    y[i * 2] = x[i * 3] + x[i * 3 + 1];
    y[i * 2 + 1] = x[i * 3 + 1] - x[i * 3 + 2];
  }
  zrt_model_h model = NULL;
  EXPECT(zrt_model_create(ctx, kMlp, &model) == ZRT_SUCCESS, "create");
  zrt_model_info_t info;
  EXPECT(zrt_model_query(model, &info) == ZRT_SUCCESS, "query");
  EXPECT(info.parameters == 3 * 8 + 8 + 8 * 2 + 2 && info.input_ndim == 1 &&
             info.input_shape[0] == 3 && info.output_ndim == 1 && info.output_shape[0] == 2 &&
             info.stage == 3,
         "info: %lld parameters, stage %d", (long long)info.parameters, info.stage);

  zrt_tensor_t in = tensor2(x, 16, 3), target = tensor2(y, 16, 2);
  double first = 0, loss = 0;
  for (int step = 0; step < 40; ++step) {
    EXPECT(zrt_model_train_step(model, &in, &target, &loss) == ZRT_SUCCESS, "train step %d", step);
    if (step == 0) first = loss;
  }
  EXPECT(loss < 0.5 * first, "the loss went from %g to %g", first, loss);

  /* Rank 1 alone passes 4 features: both ranks fail, the message names rank 1, and the
   * model trains on afterwards. */
  zrt_tensor_t bad = tensor2(x, 12, rank == 1 ? 4 : 3);
  zrt_tensor_t bad_target = tensor2(y, 12, 2);
  zrt_status_t rc = zrt_model_train_step(model, &bad, &bad_target, &loss);
  EXPECT(rc == ZRT_ERR_INVALID_ARGUMENT, "a bad shape on rank 1 gave %d", (int)rc);
  EXPECT(strstr(zrt_last_error_message(), "rank 1") != NULL &&
             strstr(zrt_last_error_message(), "expected 3") != NULL,
         "the message names the rank and the expected dimension");
  EXPECT(zrt_model_query(model, &info) == ZRT_SUCCESS && info.optimizer_steps == 40,
         "the failed step changed the step count to %lld", (long long)info.optimizer_steps);
  EXPECT(zrt_model_train_step(model, &in, &target, &loss) == ZRT_SUCCESS,
         "a step after the failure");

  /* Inference: the output's shape is checked too. */
  zrt_tensor_t o = tensor2(out, 16, 2), o_bad = tensor2(out, 15, 2);
  EXPECT(zrt_model_forward(model, &in, &o) == ZRT_SUCCESS, "forward");
  EXPECT(zrt_model_forward(model, &in, &o_bad) == ZRT_ERR_INVALID_ARGUMENT,
         "an output of another batch");
  EXPECT(zrt_model_train_step(model, NULL, &target, &loss) == ZRT_ERR_INVALID_ARGUMENT,
         "NULL input");
  EXPECT(zrt_model_backward_step(model, &o) == ZRT_ERR_INVALID_STATE,
         "backward without forward_train");

  /* A NaN in rank 0's batch: the engine skips the step, on every rank, and changes nothing. */
  {
    float xn[48], before_nan[32], after_nan[32];
    memcpy(xn, x, sizeof xn);
    if (rank == 0) xn[4] = NAN;
    zrt_tensor_t in_nan = tensor2(xn, 16, 3), ob = tensor2(before_nan, 16, 2),
                 oa = tensor2(after_nan, 16, 2);
    zrt_model_info_t i0, i1;
    EXPECT(zrt_model_query(model, &i0) == ZRT_SUCCESS &&
               zrt_model_forward(model, &in, &ob) == ZRT_SUCCESS,
           "before the NaN step");
    EXPECT(zrt_model_train_step(model, &in_nan, &target, &loss) == ZRT_SUCCESS, "a NaN step");
    EXPECT(isnan(loss), "the NaN step's loss is %g", loss);
    EXPECT(zrt_model_query(model, &i1) == ZRT_SUCCESS && i1.optimizer_steps == i0.optimizer_steps,
           "the NaN step was applied (%lld -> %lld)", (long long)i0.optimizer_steps,
           (long long)i1.optimizer_steps);
    EXPECT(zrt_model_forward(model, &in, &oa) == ZRT_SUCCESS &&
               memcmp(before_nan, after_nan, sizeof before_nan) == 0,
           "the NaN step changed the parameters");
    EXPECT(zrt_model_forward(model, &in, &o) == ZRT_SUCCESS, "forward");
  }

  /* Save; a model of other layers refuses the checkpoint and is unchanged. */
  EXPECT(zrt_model_save(model, "c_model.h5") == ZRT_SUCCESS, "save");
  const char *other =
      "{\"model\": {\"input\": [3], \"layers\": [{\"type\": \"linear\", \"features\": 2}]},"
      " \"zero_optimization\": {\"stage\": 1}}";
  zrt_model_h model2 = NULL;
  EXPECT(zrt_model_create(ctx, other, &model2) == ZRT_SUCCESS, "create another");
  float before[32], after[32];
  zrt_tensor_t ob = tensor2(before, 16, 2), oa = tensor2(after, 16, 2);
  EXPECT(zrt_model_forward(model2, &in, &ob) == ZRT_SUCCESS, "forward before");
  EXPECT(zrt_model_load(model2, "c_model.h5") == ZRT_ERR_INVALID_ARGUMENT,
         "a checkpoint of other layers");
  EXPECT(strstr(zrt_last_error_message(), "other layers") != NULL, "says why");
  EXPECT(zrt_model_forward(model2, &in, &oa) == ZRT_SUCCESS &&
             memcmp(before, after, sizeof before) == 0,
         "the refused load changed the model");
  EXPECT(zrt_model_destroy(model2) == ZRT_SUCCESS, "destroy");
  /* ...and the same layers at another stage load it, to the same predictions. */
  const char *same_stage0 =
      "{\"model\": {\"input\": [3], \"layers\": [{\"type\": \"linear\", \"features\": 8},"
      " {\"type\": \"relu\"}, {\"type\": \"linear\", \"features\": 2}]},"
      " \"loss\": {\"type\": \"mse\"}, \"zero_optimization\": {\"stage\": 0}}";
  EXPECT(zrt_model_create(ctx, same_stage0, &model2) == ZRT_SUCCESS, "create at stage 0");
  EXPECT(zrt_model_load(model2, "c_model.h5") == ZRT_SUCCESS, "load at stage 0");
  {
    zrt_model_info_t saved, loaded;
    EXPECT(zrt_model_query(model, &saved) == ZRT_SUCCESS &&
               zrt_model_query(model2, &loaded) == ZRT_SUCCESS &&
               loaded.optimizer_steps == saved.optimizer_steps && loaded.stage == 0,
           "the loaded model's steps");
  }
  EXPECT(
      zrt_model_forward(model2, &in, &oa) == ZRT_SUCCESS && memcmp(out, after, sizeof after) == 0,
      "stage 0 predicts other values than stage 3 saved");
  EXPECT(zrt_model_destroy(model2) == ZRT_SUCCESS, "destroy");
  EXPECT(zrt_model_destroy(model) == ZRT_SUCCESS, "destroy");

  /* Configurations that are refused, naming what is wrong. */
  struct {
    const char *config, *says;
  } refused[] = {
      {"{\"model\": {\"input\": [3], \"layers\": [{\"type\": \"lineer\", \"features\": 2}]}}",
       "did you mean \"linear\""},
      {"{\"model\": {\"input\": [3], \"layers\": [{\"type\": \"linear\", \"feature\": 2}]}}",
       "did you mean \"features\""},
      {"{\"model\": {\"input\": [3], \"layers\": [{\"type\": \"residual\", \"layers\": "
       "[{\"type\": \"linear\", \"features\": 4}]}]}}",
       "dimension 0 differs"},
      {"{\"model\": {\"input\": [4, 6], \"layers\": [{\"type\": \"transformer\", \"heads\": 4}]}}",
       "must divide by heads"},
      {"{\"model\": {\"input\": [3], \"layers\": [{\"type\": \"linear\", \"features\": 2}]},"
       " \"loss\": {\"type\": \"mae\"}}",
       "unknown loss type"},
      {"{\"model\": {\"input\": [3], \"layers\": [{\"type\": \"linear\", \"features\": 2}]},"
       " \"zero_optimisation\": {\"stage\": 3}}",
       "zero_optimization"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; ++i) {
    zrt_model_h m = NULL;
    rc = zrt_model_create(ctx, refused[i].config, &m);
    EXPECT(rc != ZRT_SUCCESS && m == NULL, "configuration %zu was accepted", i);
    EXPECT(strstr(zrt_last_error_message(), refused[i].says) != NULL,
           "configuration %zu: wanted \"%s\"", i, refused[i].says);
  }

  /* The external loss: the program's gradient of its own loss. */
  const char *external =
      "{\"model\": {\"input\": [3], \"layers\": [{\"type\": \"linear\", \"features\": 2}]},"
      " \"loss\": {\"type\": \"external\"}, \"optimizer\": {\"type\": \"SGD\", \"params\": "
      "{\"lr\": 0.1}}}";
  EXPECT(zrt_model_create(ctx, external, &model) == ZRT_SUCCESS, "create external");
  EXPECT(zrt_model_train_step(model, &in, &target, &loss) == ZRT_ERR_INVALID_STATE,
         "train_step refused");
  double l0 = 0, l1 = 0;
  for (int step = 0; step < 20; ++step) {
    EXPECT(zrt_model_forward_train(model, &in, &o) == ZRT_SUCCESS, "forward_train");
    float grad[32];
    double l = 0;
    for (int k = 0; k < 32; ++k) {
      const float d = out[k] - y[k];
      l += (double)d * d / 32;
      grad[k] = 2 * d / 32; /* of the mean squared error */
    }
    if (step == 0) l0 = l;
    l1 = l;
    zrt_tensor_t g = tensor2(grad, 16, 2);
    EXPECT(zrt_model_backward_step(model, &g) == ZRT_SUCCESS, "backward_step");
  }
  EXPECT(l1 < l0, "the program's loss went from %g to %g", l0, l1);
  EXPECT(zrt_model_destroy(model) == ZRT_SUCCESS, "destroy");

  /* bf16 parameters and gradients (fp32 master weights) with 2 micro-steps an update. */
  const char *bf16 =
      "{\"model\": {\"input\": [3], \"layers\": [{\"type\": \"linear\", \"features\": 8},"
      " {\"type\": \"relu\"}, {\"type\": \"linear\", \"features\": 2}]},"
      " \"loss\": {\"type\": \"mse\"}, \"seed\": 7, \"optimizer\": {\"type\": \"AdamW\", "
      "\"params\": {\"lr\": 0.02}},"
      " \"zero_optimization\": {\"stage\": 2}, \"bf16\": {\"enabled\": true}, "
      "\"gradient_accumulation_steps\": 2}";
  EXPECT(zrt_model_create(ctx, bf16, &model) == ZRT_SUCCESS, "create bf16");
  for (int step = 0; step < 80; ++step) {
    EXPECT(zrt_model_train_step(model, &in, &target, &loss) == ZRT_SUCCESS, "bf16 step %d", step);
    if (step == 0) first = loss;
  }
  EXPECT(loss < 0.5 * first, "bf16: the loss went from %g to %g", first, loss);
  EXPECT(zrt_model_query(model, &info) == ZRT_SUCCESS && info.optimizer_steps == 40,
         "bf16: %lld updates for 80 micro-steps of 2", (long long)info.optimizer_steps);
  char text[2048];
  EXPECT(zrt_model_describe(model, text, sizeof text, NULL) == ZRT_SUCCESS &&
             strstr(text, "bf16") != NULL,
         "bf16: the description says so");
  EXPECT(zrt_model_destroy(model) == ZRT_SUCCESS, "destroy");

  zrt_finalize(ctx);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("%s: %d failure(s)\n", total ? "FAILED" : "ok", total);
  MPI_Finalize();
  return total != 0;
}
