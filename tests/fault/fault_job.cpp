// One training job of the fault suite (run_fault_suite.py): a small model on zerort's
// engine through the public C API, with one fault injected on one rank.
//   fault_job MODE [--victim R] [--at STEP] [--steps N] [--dtype fp32|bf16|fp16]
//             [--save DIR] [--load FILE]
// Modes:
//   none             train; every rank prints "rank R: done"
//   step-stop        the victim stops itself (SIGSTOP) just before zrt_engine_step
//   collective-stop  the victim stops itself just before a zrt_all_reduce
//   kill             the victim kills itself (SIGKILL) just before zrt_engine_step
//   register-fail    the victim registers a parameter with a zero extent, then destroys
//                    its engine as a program does on an error; the others commit
//   nan              the victim writes a NaN into its gradient at step --at: every rank
//                    checks that the step is skipped and leaves parameters unchanged, and
//                    saves checkpoints before and after it (DIR/before.h5, DIR/after.h5)
//   save-loop        a larger model saved to DIR/ckpt.h5 after each of --steps steps (the
//                    suite kills it at random moments)
//   disk-full        saves DIR/good.h5, then DIR/full.h5 under a 64 KiB file size limit
//                    (RLIMIT_FSIZE: "File too large"), then DIR/full.h5 again without it
// A rank whose call fails prints "rank R: FAILED <status>: <message>" and, for a timeout
// (the others may be stuck for good), aborts the job after a second, as a program should;
// otherwise it cleans up and exits 2.
#include <mpi.h>
#include <zerort/zerort.h>

#include <sys/resource.h>
#include <unistd.h>
#include <cmath>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int g_rank = 0;
zrt_context_h g_ctx = nullptr;
zrt_engine_h g_engine = nullptr;

[[noreturn]] void failed(zrt_status_t st, const char *what) {
  std::printf("rank %d: FAILED %s: %s: %s\n", g_rank, zrt_status_string(st), what,
              zrt_last_error_message());
  std::fflush(stdout);
  if (st == ZRT_ERR_TIMEOUT) {
    sleep(1);  // let the other survivors print theirs
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  // Every rank failed alike (the error was agreed): clean up together.
  if (g_engine != nullptr) zrt_engine_destroy(g_engine);
  if (g_ctx != nullptr) zrt_finalize(g_ctx);
  MPI_Finalize();
  std::exit(2);
}

#define CALL(call)                              \
  do {                                          \
    zrt_status_t st_ = (call);                  \
    if (st_ != ZRT_SUCCESS) failed(st_, #call); \
  } while (0)

struct Options {
  std::string mode = "none";
  int victim = 1;
  int at = 3;
  int steps = 6;
  std::string dtype = "fp32";
  std::string save;
  std::string load;  // a checkpoint to continue from, after the commit
};

Options parse(int argc, char **argv) {
  Options o;
  if (argc > 1) o.mode = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--victim")
      o.victim = std::atoi(v.c_str());
    else if (k == "--at")
      o.at = std::atoi(v.c_str());
    else if (k == "--steps")
      o.steps = std::atoi(v.c_str());
    else if (k == "--dtype")
      o.dtype = v;
    else if (k == "--save")
      o.save = v;
    else if (k == "--load")
      o.load = v;
  }
  return o;
}

// 16-bit gradients hold the bits of a float's upper half (bf16) or IEEE half (fp16);
// only the NaN and a few small values are ever written.
uint16_t half_bits(float x, zrt_dtype_t dtype) {
  if (std::isnan(x)) return dtype == ZRT_DTYPE_BF16 ? 0x7fc0 : 0x7e00;
  if (dtype == ZRT_DTYPE_BF16) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    return static_cast<uint16_t>(u >> 16);
  }
  // fp16 of |x| < 1 in steps of 1/1024 is enough for these gradients.
  const int m = static_cast<int>(std::fabs(x) * 1024.0f);
  uint16_t h = 0;
  if (m > 0) {
    int e = 0;
    float f = std::frexp(std::fabs(x), &e);  // x = f * 2^e, f in [0.5, 1)
    const int exponent = e - 1 + 15;
    const int mantissa = static_cast<int>((f * 2 - 1) * 1024.0f);
    h = static_cast<uint16_t>((exponent << 10) | (mantissa & 0x3ff));
  }
  return x < 0 ? static_cast<uint16_t>(h | 0x8000) : h;
}

void write_grad(void *grad, zrt_dtype_t dtype, size_t i, float value) {
  if (dtype == ZRT_DTYPE_FP32)
    static_cast<float *>(grad)[i] = value;
  else
    static_cast<uint16_t *>(grad)[i] = half_bits(value, dtype);
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  const Options o = parse(argc, argv);
  const bool victim = g_rank == o.victim;

  zrt_context_h ctx = nullptr;
  CALL(zrt_init(MPI_COMM_WORLD, nullptr, &ctx));
  g_ctx = ctx;

  zrt_engine_params_t ep = {};
  ep.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE | ZRT_ENGINE_PARAM_FIELD_COMPUTE_DTYPE |
                  ZRT_ENGINE_PARAM_FIELD_LR | ZRT_ENGINE_PARAM_FIELD_REDUCE_BUCKET_BYTES;
  ep.stage = 2;
  ep.compute_dtype = o.dtype == "bf16"   ? ZRT_DTYPE_BF16
                     : o.dtype == "fp16" ? ZRT_DTYPE_FP16
                                         : ZRT_DTYPE_FP32;
  ep.lr = 1e-2;
  ep.reduce_bucket_bytes = 16 << 10;
  zrt_engine_h engine = nullptr;
  CALL(zrt_engine_create(ctx, &ep, &engine));
  g_engine = engine;

  const bool big = o.mode == "save-loop";
  const int64_t shapes[2][2] = {{big ? 1024 : 64, 96}, {96, 1}};
  zrt_param_h params[2] = {nullptr, nullptr};
  for (int p = 0; p < 2; ++p) {
    int64_t shape[2] = {shapes[p][0], shapes[p][1]};
    if (o.mode == "register-fail" && victim && p == 1) shape[0] = 0;
    const std::string name = "w" + std::to_string(p);
    zrt_status_t st =
        zrt_param_register(engine, name.c_str(), ep.compute_dtype, 2, shape, &params[p]);
    if (st != ZRT_SUCCESS) {
      // What a program does on an error: report it, clean up, leave.
      std::printf("rank %d: zrt_param_register failed here: %s\n", g_rank,
                  zrt_last_error_message());
      std::fflush(stdout);
      zrt_engine_destroy(engine);
      zrt_finalize(ctx);
      MPI_Finalize();
      return 2;
    }
  }
  CALL(zrt_engine_commit(engine));
  if (!o.load.empty()) {
    CALL(zrt_checkpoint_load(engine, o.load.c_str()));
    std::printf("rank %d: resumed from %s\n", g_rank, o.load.c_str());
  }
  const zrt_dtype_t dtype = ep.compute_dtype;
  std::vector<size_t> numel = {static_cast<size_t>(shapes[0][0] * 96), 96};

  zrt_comm_h comm = nullptr;
  CALL(zrt_context_comm(ctx, &comm));
  for (int step = 1; step <= o.steps; ++step) {
    std::vector<float> before;
    if (o.mode == "nan" && step == o.at) {
      for (int p = 0; p < 2; ++p) {
        std::vector<float> v(numel[p]);
        CALL(zrt_param_get(engine, params[p], v.data(), ZRT_DTYPE_FP32));
        before.insert(before.end(), v.begin(), v.end());
      }
      if (!o.save.empty())
        CALL(zrt_checkpoint_save(engine, (o.save + "/before.h5").c_str(), nullptr));
    }
    for (int p = 0; p < 2; ++p) {
      void *grad = nullptr;
      CALL(zrt_grad_data(engine, params[p], &grad));
      for (size_t i = 0; i < numel[p]; ++i)
        write_grad(grad, dtype, i, 0.01f * static_cast<float>((i + step + g_rank) % 17) - 0.08f);
      if (o.mode == "nan" && victim && step == o.at && p == 1) write_grad(grad, dtype, 5, NAN);
      CALL(zrt_grad_ready(engine, params[p]));
    }
    if (step == o.at && victim) {
      if (o.mode == "step-stop") raise(SIGSTOP);
      if (o.mode == "kill") raise(SIGKILL);
    }
    zrt_step_report_t report = {};
    report.field_mask = ZRT_STEP_REPORT_FIELD_ALL;
    CALL(zrt_engine_step(engine, &report));
    if (o.mode == "collective-stop" && step == o.at) {
      if (victim) raise(SIGSTOP);
      float x[8] = {1, 1, 1, 1, 1, 1, 1, 1};
      CALL(zrt_all_reduce(comm, x, x, 8, ZRT_DTYPE_FP32, ZRT_OP_SUM));
    }
    if (o.mode == "save-loop") {
      CALL(zrt_checkpoint_save(engine, (o.save + "/ckpt.h5").c_str(), nullptr));
      std::printf("rank %d: saved step %d\n", g_rank, step);
      std::fflush(stdout);
    }
    if (o.mode == "disk-full" && step == o.at) {
      CALL(zrt_checkpoint_save(engine, (o.save + "/good.h5").c_str(), nullptr));
      // Past the limit a write fails with EFBIG instead of raising SIGXFSZ.
      std::signal(SIGXFSZ, SIG_IGN);
      struct rlimit limit = {64 << 10, RLIM_INFINITY};
      setrlimit(RLIMIT_FSIZE, &limit);
      zrt_status_t st = zrt_checkpoint_save(engine, (o.save + "/full.h5").c_str(), nullptr);
      std::printf("rank %d: save under the limit: %s: %s\n", g_rank, zrt_status_string(st),
                  st == ZRT_SUCCESS ? "" : zrt_last_error_message());
      limit.rlim_cur = RLIM_INFINITY;
      setrlimit(RLIMIT_FSIZE, &limit);
      CALL(zrt_checkpoint_save(engine, (o.save + "/full.h5").c_str(), nullptr));
      std::printf("rank %d: saved again without the limit\n", g_rank);
    }
    if (o.mode == "nan" && step == o.at) {
      std::vector<float> after;
      for (int p = 0; p < 2; ++p) {
        std::vector<float> v(numel[p]);
        CALL(zrt_param_get(engine, params[p], v.data(), ZRT_DTYPE_FP32));
        after.insert(after.end(), v.begin(), v.end());
      }
      const bool same =
          before.size() == after.size() &&
          std::memcmp(before.data(), after.data(), before.size() * sizeof(float)) == 0;
      std::printf(
          "rank %d: step %d skipped %d (skipped so far %lld), grad_norm %g, "
          "parameters unchanged %s\n",
          g_rank, step, report.skipped, static_cast<long long>(report.skipped_steps),
          report.grad_norm, same ? "yes" : "no");
      if (!o.save.empty())
        CALL(zrt_checkpoint_save(engine, (o.save + "/after.h5").c_str(), nullptr));
    }
  }
  std::printf("rank %d: done\n", g_rank);
  g_engine = nullptr;
  CALL(zrt_engine_destroy(engine));
  g_ctx = nullptr;
  CALL(zrt_finalize(ctx));
  MPI_Finalize();
  return 0;
}
