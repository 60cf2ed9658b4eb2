// The engine's memory report against the ZeRO paper, loss scaling with an injected
// overflow, thousands of tiny tensors, DeepSpeed configuration files, and bad input.
#include <sys/resource.h>
#include <unistd.h>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "support/mpi_fixture.hpp"

namespace {

using test::mentions;

zrt_engine_params_t basic(int stage, zrt_dtype_t dtype) {
  zrt_engine_params_t p = {};
  p.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE | ZRT_ENGINE_PARAM_FIELD_COMPUTE_DTYPE;
  p.stage = stage;
  p.compute_dtype = dtype;
  return p;
}

using Engine = test::EngineOwner;

}  // namespace

TEST(EngineMemory, ReportMatchesTheZeroFormulasPlusBuckets) {
  const double n = test::size();
  // About 1.2M parameters in tensors of awkward sizes: padding stays far below 2%.
  std::vector<int64_t> sizes = {393216 + 7, 1536 + 1, 589824 - 3, 768, 196608 + 11, 33};
  for (zrt_dtype_t dt : {ZRT_DTYPE_FP32, ZRT_DTYPE_BF16}) {
    for (int stage = 0; stage <= 3; ++stage) {
      SCOPED_TRACE(fmt::format("stage {} {}", stage, dt == ZRT_DTYPE_FP32 ? "fp32" : "bf16"));
      zrt_engine_params_t p = basic(stage, dt);
      p.field_mask |= ZRT_ENGINE_PARAM_FIELD_REDUCE_BUCKET_BYTES;
      p.reduce_bucket_bytes = 1 << 20;
      Engine e;
      CHECK_OK(zrt_engine_create(test::context(), &p, &e.e));
      for (size_t i = 0; i < sizes.size(); ++i) {
        zrt_param_h h;
        CHECK_OK(zrt_param_register(e.e, fmt::format("t{}", i).c_str(), dt, 1, &sizes[i], &h));
      }
      CHECK_OK(zrt_engine_commit(e.e));
      zrt_memory_report_t m{};
      m.field_mask = ZRT_MEMORY_REPORT_FIELD_ALL;
      CHECK_OK(zrt_engine_memory(e.e, &m));
      const double P = static_cast<double>(m.parameter_count);
      EXPECT_EQ(m.parameter_count, std::accumulate(sizes.begin(), sizes.end(), int64_t{0}));
      double formula = 0;
      if (dt == ZRT_DTYPE_BF16) {
        const double f[] = {16 * P, 4 * P + 12 * P / n, 2 * P + 14 * P / n, 16 * P / n};
        formula = f[stage];
      } else {
        const double f[] = {16 * P, 8 * P + 8 * P / n, 4 * P + 12 * P / n, 16 * P / n};
        formula = f[stage];
      }
      const double model_state = static_cast<double>(m.total - m.buckets);
      EXPECT_NEAR(model_state, formula, 0.02 * formula)
          << "model state " << model_state << " bytes, formula " << formula;
      EXPECT_EQ(m.total,
                m.parameters + m.gradients + m.master_weights + m.optimizer_state + m.buckets);
      if (stage >= 2) {
        EXPECT_GT(m.buckets, 0);
      }
      if (dt == ZRT_DTYPE_FP32) {
        EXPECT_EQ(m.master_weights, 0);
      }
    }
  }
}

// This process's private writable memory now (VmData), in bytes.
size_t vm_data_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  size_t kib = 0;
  while (status >> key)
    if (key == "VmData:" && status >> kib) return kib * 1024;
  return 0;
}

TEST(EngineMemoryFit, AModelBeyondTheMemoryLimitFailsAtCommitOnEveryRankSayingWhatItNeeds) {
  // A context reads the limits at zrt_init: one made under a lowered RLIMIT_DATA keeps it,
  // with 512 MiB of room, while the process gets its own limit back at once.
  struct rlimit saved {};
  ASSERT_EQ(getrlimit(RLIMIT_DATA, &saved), 0);
  struct rlimit low = saved;
  low.rlim_cur = vm_data_bytes() + (size_t{512} << 20);
  if (saved.rlim_cur != RLIM_INFINITY && saved.rlim_cur < low.rlim_cur)
    low.rlim_cur = saved.rlim_cur;
  ASSERT_EQ(setrlimit(RLIMIT_DATA, &low), 0);
  zrt_context_h ctx = nullptr;
  const zrt_status_t init = zrt_init(MPI_COMM_WORLD, nullptr, &ctx);
  ASSERT_EQ(setrlimit(RLIMIT_DATA, &saved), 0);
  ASSERT_EQ(init, ZRT_SUCCESS) << test::last_error();
  {
    // 256 Mi fp32 elements: 4 GiB of model states at stage 0, and nothing is allocated.
    zrt_engine_params_t p = basic(0, ZRT_DTYPE_FP32);
    Engine e;
    CHECK_OK(zrt_engine_create(ctx, &p, &e.e));
    const int64_t shape[] = {int64_t{1} << 28};
    zrt_param_h w = nullptr;
    CHECK_OK(zrt_param_register(e.e, "w", ZRT_DTYPE_FP32, 1, shape, &w));
    EXPECT_EQ(zrt_engine_commit(e.e), ZRT_ERR_OUT_OF_MEMORY);
    mentions(
        "zrt_engine_commit: rank 0: the model states need 4 GiB of host memory on this rank "
        "at ZeRO stage 0 over " +
        std::to_string(test::size()) + " rank");
    mentions("(in all: parameters 1 GiB, gradients 1 GiB, optimizer state 2 GiB)");
    mentions("more under RLIMIT_DATA (ulimit -d) of");
    mentions("To fit: ");
    mentions("or a larger ulimit -d");
  }
  {  // One that fits commits.
    zrt_engine_params_t p = basic(0, ZRT_DTYPE_FP32);
    Engine e;
    CHECK_OK(zrt_engine_create(ctx, &p, &e.e));
    const int64_t shape[] = {int64_t{1} << 20};
    zrt_param_h w = nullptr;
    CHECK_OK(zrt_param_register(e.e, "w", ZRT_DTYPE_FP32, 1, shape, &w));
    CHECK_OK(zrt_engine_commit(e.e));
  }
  CHECK_OK(zrt_finalize(ctx));
}

TEST(EngineLossScale, OverflowOnOneRankSkipsTheStepEverywhereAndTheScaleRecovers) {
  zrt_engine_params_t p = basic(2, ZRT_DTYPE_FP16);
  p.field_mask |= ZRT_ENGINE_PARAM_FIELD_INITIAL_SCALE_POWER | ZRT_ENGINE_PARAM_FIELD_HYSTERESIS |
                  ZRT_ENGINE_PARAM_FIELD_LOSS_SCALE_WINDOW | ZRT_ENGINE_PARAM_FIELD_LR;
  p.initial_scale_power = 8;
  p.hysteresis = 1;
  p.loss_scale_window = 2;
  p.lr = 0.01;
  Engine e;
  CHECK_OK(zrt_engine_create(test::context(), &p, &e.e));
  int64_t shape = 100;
  zrt_param_h h;
  CHECK_OK(zrt_param_register(e.e, "w", ZRT_DTYPE_FP16, 1, &shape, &h));
  CHECK_OK(zrt_engine_commit(e.e));
  std::vector<float> init(100, 0.5f), before(100), after(100);
  CHECK_OK(zrt_param_set(e.e, h, init.data(), ZRT_DTYPE_FP32));

  auto micro_step = [&](bool inject, zrt_step_report_t *r) {
    double scale = 0;
    ASSERT_EQ(zrt_engine_loss_scale(e.e, &scale), ZRT_SUCCESS);
    void *g = nullptr;
    ASSERT_EQ(zrt_param_grad_data(e.e, h, &g), ZRT_SUCCESS);
    auto *g16 = static_cast<uint16_t *>(g);
    for (int i = 0; i < 100; ++i)
      g16[i] = std::bit_cast<uint16_t>(static_cast<_Float16>(0.01 * scale));
    if (inject) g16[42] = 0x7c00;  // +Inf in fp16
    ASSERT_EQ(zrt_param_grad_ready(e.e, h), ZRT_SUCCESS);
    ASSERT_EQ(zrt_engine_step(e.e, r), ZRT_SUCCESS) << test::last_error();
  };

  zrt_step_report_t r{};
  r.field_mask = ZRT_STEP_REPORT_FIELD_ALL;
  micro_step(false, &r);
  EXPECT_TRUE(r.applied);
  EXPECT_EQ(r.loss_scale, 256);
  CHECK_OK(zrt_param_get(e.e, h, before.data(), ZRT_DTYPE_FP32));
  micro_step(test::rank() == test::size() - 1, &r);  // only the last rank overflows
  EXPECT_TRUE(r.skipped);
  EXPECT_FALSE(r.applied);
  EXPECT_EQ(r.loss_scale, 128);  // halved on every rank
  EXPECT_EQ(r.step, 1);
  CHECK_OK(zrt_param_get(e.e, h, after.data(), ZRT_DTYPE_FP32));
  EXPECT_EQ(before, after) << "a skipped step must not touch the parameters";
  micro_step(false, &r);
  EXPECT_TRUE(r.applied);
  EXPECT_EQ(r.loss_scale, 128);
  micro_step(false, &r);
  EXPECT_EQ(r.loss_scale, 256) << "the scale grows back after the window";
  EXPECT_EQ(r.step, 3);
  // The unscaled norm is what the program computed: 0.01 per element.
  EXPECT_NEAR(r.grad_norm, 0.01 * std::sqrt(100.0), 1e-4);
}

TEST(EngineShapes, ThousandsOfTinyTensorsAnyReadyOrderAndSgd) {
  // 2000 tensors of 1..5 elements, plus a one-element one; gradients are a known function,
  // so the SGD result is known exactly.
  for (int stage : {0, 1, 2, 3}) {
    SCOPED_TRACE(fmt::format("stage {}", stage));
    zrt_engine_params_t p = basic(stage, ZRT_DTYPE_FP32);
    p.field_mask |= ZRT_ENGINE_PARAM_FIELD_OPTIMIZER | ZRT_ENGINE_PARAM_FIELD_LR |
                    ZRT_ENGINE_PARAM_FIELD_REDUCE_BUCKET_BYTES;
    p.optimizer = ZRT_OPTIMIZER_SGD;
    p.lr = 0.5;
    p.reduce_bucket_bytes = 1000;
    Engine e;
    CHECK_OK(zrt_engine_create(test::context(), &p, &e.e));
    const int count = 2001;
    std::vector<int64_t> sizes(count);
    for (int i = 0; i < count; ++i) {
      sizes[static_cast<size_t>(i)] = i == count - 1 ? 1 : 1 + i % 5;
      zrt_param_h h;
      CHECK_OK(zrt_param_register(e.e, fmt::format("tiny.{}", i).c_str(), ZRT_DTYPE_FP32, 1,
                                  &sizes[static_cast<size_t>(i)], &h));
      e.params.push_back(h);
    }
    CHECK_OK(zrt_engine_commit(e.e));
    std::vector<int> order(count);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937 rng(static_cast<unsigned>(test::rank() * 7 + stage));
    std::shuffle(order.begin(), order.end(), rng);  // a different order on every rank
    // Gathers are collective: the same order everywhere. Gradients: any order.
    for (zrt_param_h h : e.params)
      CHECK_OK(zrt_param_gather(e.e, h));
    for (int t : order) {
      zrt_param_h h = e.params[static_cast<size_t>(t)];
      void *g = nullptr;
      CHECK_OK(zrt_param_grad_data(e.e, h, &g));
      for (int64_t k = 0; k < sizes[static_cast<size_t>(t)]; ++k)
        static_cast<float *>(g)[k] +=
            static_cast<float>(test::rank() + 1) * 0.25f * static_cast<float>(k + 1);
      CHECK_OK(zrt_param_grad_ready(e.e, h));
    }
    for (zrt_param_h h : e.params)
      CHECK_OK(zrt_param_release(e.e, h));
    CHECK_OK(zrt_engine_step(e.e, nullptr));
    // Mean over ranks of (r + 1) * 0.25 * (k + 1), times lr 0.5, from zero weights.
    const double mean = (test::size() + 1) / 2.0;
    int bad = 0;
    for (int t = 0; t < count; ++t) {
      std::vector<float> w(static_cast<size_t>(sizes[static_cast<size_t>(t)]));
      CHECK_OK(zrt_param_get(e.e, e.params[static_cast<size_t>(t)], w.data(), ZRT_DTYPE_FP32));
      for (size_t k = 0; k < w.size(); ++k)
        if (std::fabs(w[k] + 0.5 * mean * 0.25 * static_cast<double>(k + 1)) > 1e-6) ++bad;
    }
    EXPECT_EQ(bad, 0);
  }
}

TEST(EngineConfig, DeepSpeedConfigFileWorksAsItIs) {
  std::string path =
      ::testing::TempDir() + fmt::format("ds_config_{}_{}.json", getpid(), test::rank());
  std::ofstream(path) << R"({
    "train_batch_size": 32,
    "steps_per_print": 10,
    "optimizer": {"type": "AdamW", "params": {"lr": 0.0003, "betas": [0.8, 0.99], "eps": 1e-6,
                                              "weight_decay": 0.1}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 100}},
    "bf16": {"enabled": true},
    "gradient_clipping": 1.0,
    "gradient_accumulation_steps": 2,
    "zero_optimization": {"stage": 3, "reduce_bucket_size": 5e5, "overlap_comm": true,
                          "contiguous_gradients": true}
  })";
  zrt_init_params_t ip = {};
  ip.field_mask = ZRT_INIT_PARAM_FIELD_CONFIG_FILE;
  ip.config_file = path.c_str();
  zrt_context_h ctx = nullptr;
  CHECK_OK(zrt_init(MPI_COMM_WORLD, &ip, &ctx));
  zrt_engine_h e = nullptr;
  CHECK_OK(zrt_engine_create(ctx, nullptr, &e));
  size_t n = 0;
  zrt_context_describe(ctx, nullptr, 0, &n);
  std::string d(n + 1, '\0');
  zrt_context_describe(ctx, d.data(), d.size(), &n);
  EXPECT_NE(d.find("\"stage\":3"), std::string::npos) << d.substr(0, 400);
  EXPECT_NE(d.find("\"dtype\":\"bf16\""), std::string::npos);
  // A bf16 parameter is what this engine takes; fp32 is refused by name.
  int64_t shape = 3;
  zrt_param_h h;
  EXPECT_EQ(zrt_param_register(e, "x", ZRT_DTYPE_FP32, 1, &shape, &h), ZRT_ERR_NOT_SUPPORTED);
  mentions("computes in bf16");
  CHECK_OK(zrt_engine_destroy(e));
  CHECK_OK(zrt_finalize(ctx));

  // A key DeepSpeed does not have is an error that names it.
  std::ofstream(path) << R"({"zero_optimization": {"stgae": 2}})";
  EXPECT_EQ(zrt_init(MPI_COMM_WORLD, &ip, &ctx), ZRT_ERR_CONFIG);
  mentions("unknown key 'zero_optimization.stgae'");
  mentions("zero_optimization.stage");
  std::ofstream(path) << R"({"optimizer": {"params": {"betas": [0.9]}}})";
  EXPECT_EQ(zrt_init(MPI_COMM_WORLD, &ip, &ctx), ZRT_ERR_CONFIG);
  mentions("optimizer.params.betas");
}

TEST(EngineErrors, BadInputIsAClearStatusNamingTheParameter) {
  zrt_engine_h e = nullptr;
  zrt_engine_params_t p = basic(5, ZRT_DTYPE_FP32);
  EXPECT_EQ(zrt_engine_create(test::context(), &p, &e), ZRT_ERR_INVALID_ARGUMENT);
  mentions("params->stage is 5");
  p = basic(2, ZRT_DTYPE_FP64);
  EXPECT_EQ(zrt_engine_create(test::context(), &p, &e), ZRT_ERR_NOT_SUPPORTED);
  mentions("fp64 is not supported");
  p = basic(0, ZRT_DTYPE_FP32);
  p.field_mask |= ZRT_ENGINE_PARAM_FIELD_OFFLOAD_OPTIMIZER;
  p.offload_optimizer = 1;
  EXPECT_EQ(zrt_engine_create(test::context(), &p, &e), ZRT_ERR_NOT_SUPPORTED);
  mentions("stage 1, 2 or 3");
  EXPECT_EQ(e, nullptr);

  p = basic(2, ZRT_DTYPE_FP32);
  Engine g;
  CHECK_OK(zrt_engine_create(test::context(), &p, &g.e));
  int64_t shape[2] = {3, 5}, bad_shape[2] = {3, 0};
  zrt_param_h a = nullptr, b = nullptr;
  EXPECT_EQ(zrt_param_register(g.e, "a", ZRT_DTYPE_FP32, 2, bad_shape, &a),
            ZRT_ERR_INVALID_ARGUMENT);
  mentions("shape[1] is 0");
  EXPECT_EQ(zrt_param_register(g.e, "a", ZRT_DTYPE_FP32, 0, shape, &a), ZRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zrt_param_register(g.e, nullptr, ZRT_DTYPE_FP32, 2, shape, &a),
            ZRT_ERR_INVALID_ARGUMENT);
  CHECK_OK(zrt_param_register(g.e, "a", ZRT_DTYPE_FP32, 2, shape, &a));
  EXPECT_EQ(zrt_param_register(g.e, "a", ZRT_DTYPE_FP32, 2, shape, &b), ZRT_ERR_INVALID_ARGUMENT);
  mentions("'a' is already registered");
  void *ptr = nullptr;
  EXPECT_EQ(zrt_param_grad_data(g.e, a, &ptr), ZRT_ERR_INVALID_STATE);
  mentions("zrt_engine_commit");
  CHECK_OK(zrt_param_register(g.e, "b", ZRT_DTYPE_FP32, 1, shape, &b));
  CHECK_OK(zrt_engine_commit(g.e));
  EXPECT_EQ(zrt_param_register(g.e, "c", ZRT_DTYPE_FP32, 1, shape, &b), ZRT_ERR_INVALID_STATE);
  mentions("cannot register 'c': the engine is committed");
  EXPECT_EQ(zrt_engine_commit(g.e), ZRT_ERR_INVALID_STATE);
  EXPECT_EQ(zrt_param_set(g.e, a, nullptr, ZRT_DTYPE_FP32), ZRT_ERR_INVALID_ARGUMENT);
  mentions("values is NULL");
  EXPECT_EQ(zrt_param_grad_data(g.e, a, nullptr), ZRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zrt_param_data(g.e, nullptr, &ptr), ZRT_ERR_INVALID_HANDLE);

  CHECK_OK(zrt_param_grad_data(g.e, a, &ptr));
  CHECK_OK(zrt_param_grad_ready(g.e, a));
  EXPECT_EQ(zrt_param_grad_ready(g.e, a), ZRT_ERR_INVALID_STATE);
  mentions("called twice for 'a'");
  // 'b' is not ready on the last rank only: every rank fails, naming it, and none hangs.
  if (test::rank() != test::size() - 1) {
    CHECK_OK(zrt_param_grad_data(g.e, b, &ptr));
    CHECK_OK(zrt_param_grad_ready(g.e, b));
  }
  EXPECT_EQ(zrt_engine_step(g.e, nullptr), ZRT_ERR_INVALID_STATE);
  mentions(fmt::format("rank {}: the gradient of 'b' was not made ready", test::size() - 1));
  // The engine is still in step: a complete micro-step works.
  for (zrt_param_h h : {a, b}) {
    CHECK_OK(zrt_param_grad_data(g.e, h, &ptr));
    CHECK_OK(zrt_param_grad_ready(g.e, h));
  }
  zrt_step_report_t r{};
  r.field_mask = ZRT_STEP_REPORT_FIELD_ALL;
  CHECK_OK(zrt_engine_step(g.e, &r));
  EXPECT_TRUE(r.applied);

  // A handle of another engine is refused.
  Engine other;
  CHECK_OK(zrt_engine_create(test::context(), &p, &other.e));
  EXPECT_EQ(zrt_param_grad_ready(other.e, a), ZRT_ERR_INVALID_HANDLE);
  mentions("another engine");
}

TEST(EngineErrors, RegistrationsThatDifferAcrossRanksAreCaughtAtCommit) {
  if (test::size() < 2) GTEST_SKIP() << "needs two ranks";
  zrt_engine_params_t p = basic(2, ZRT_DTYPE_FP32);
  Engine e;
  CHECK_OK(zrt_engine_create(test::context(), &p, &e.e));
  int64_t shape = test::rank() == 1 ? 11 : 10;
  zrt_param_h a, b;
  int64_t one = 1;
  CHECK_OK(zrt_param_register(e.e, "same", ZRT_DTYPE_FP32, 1, &one, &a));
  CHECK_OK(zrt_param_register(e.e, "layer.weight", ZRT_DTYPE_FP32, 1, &shape, &b));
  EXPECT_EQ(zrt_engine_commit(e.e), ZRT_ERR_MISMATCH);
  mentions("rank 1: parameter #1 ('layer.weight') differs from rank 0's");
}

// A parameter NAME is the checkpoint's dataset /params/NAME: a path, in which HDF5 drops
// empty and "." components, and where a tensor cannot also be a group.
TEST(EngineErrors, NamesThatWouldCollideInACheckpointAreRefusedAtRegisterNamingBoth) {
  zrt_engine_params_t p = basic(2, ZRT_DTYPE_FP32);
  Engine e;
  CHECK_OK(zrt_engine_create(test::context(), &p, &e.e));
  int64_t shape = 3;
  zrt_param_h h = nullptr;
  const auto refused = [&](const char *name, const std::string &why) {
    SCOPED_TRACE(name);
    EXPECT_EQ(zrt_param_register(e.e, name, ZRT_DTYPE_FP32, 1, &shape, &h),
              ZRT_ERR_INVALID_ARGUMENT);
    mentions(why);
  };
  for (const char *name : {"a", "x/y", "lead", "p/q/r", "h.0.attn.c_attn.weight", "n/b", "n/c"})
    CHECK_OK(zrt_param_register(e.e, name, ZRT_DTYPE_FP32, 1, &shape, &h)) << name;
  refused("a/b",
          "parameter 'a/b' would be stored inside 'a', which is a tensor (the parameter "
          "'a' registered before)");
  refused("p/q/r/s", "parameter 'p/q/r/s' would be stored inside 'p/q/r', which is a tensor");
  refused("x",
          "parameter 'x' would be a tensor where 'x/y' (the parameter registered before) "
          "needs a group");
  refused("p/q", "parameter 'p/q' would be a tensor where 'p/q/r'");
  refused("/lead",
          "parameter '/lead' would be stored in a checkpoint as 'lead', the parameter "
          "'lead' registered before (HDF5 drops its leading '/')");
  refused("./a", "parameter './a' would be stored in a checkpoint as 'a', the parameter 'a'");
  refused(".",
          "parameter '.' cannot be stored in a checkpoint: HDF5 drops its '.' component, "
          "which leaves no name");
  refused("/", "parameter '/' cannot be stored in a checkpoint");
  refused("m//n",
          "parameter 'm//n' cannot be stored in a checkpoint under its name: HDF5 drops "
          "the empty component of its '//' and would store it as 'm/n'");
  refused("t/", "HDF5 drops its trailing '/' and would store it as 't'");
  refused("/v", "HDF5 drops its leading '/' and would store it as 'v'");
  refused("u/./w", "HDF5 drops its '.' component and would store it as 'u/w'");
  // Refused names leave nothing behind: the engine commits what was accepted.
  CHECK_OK(zrt_engine_commit(e.e));
  int count = 0;
  CHECK_OK(zrt_engine_param_count(e.e, &count));
  EXPECT_EQ(count, 7);
}

TEST(EngineErrors, Stage3NeedsGatherBeforeUse) {
  zrt_engine_params_t p = basic(3, ZRT_DTYPE_FP32);
  Engine e;
  CHECK_OK(zrt_engine_create(test::context(), &p, &e.e));
  int64_t shape = 40;
  zrt_param_h h;
  CHECK_OK(zrt_param_register(e.e, "w", ZRT_DTYPE_FP32, 1, &shape, &h));
  CHECK_OK(zrt_engine_commit(e.e));
  void *ptr = nullptr;
  EXPECT_EQ(zrt_param_data(e.e, h, &ptr), ZRT_ERR_INVALID_STATE);
  mentions("'w' is not gathered");
  EXPECT_EQ(zrt_param_release(e.e, h), ZRT_ERR_INVALID_STATE);
  std::vector<float> v(40);
  std::iota(v.begin(), v.end(), 1.0f);
  CHECK_OK(zrt_param_set(e.e, h, v.data(), ZRT_DTYPE_FP32));
  CHECK_OK(zrt_param_gather(e.e, h));
  CHECK_OK(zrt_param_data(e.e, h, &ptr));
  EXPECT_EQ(std::memcmp(ptr, v.data(), 40 * 4), 0) << "gathered values are the full tensor";
  CHECK_OK(zrt_param_release(e.e, h));
}

TEST(EngineErrors, Stage3GathersOfDifferentParametersFailWithMismatchOnEveryRank) {
  if (test::size() < 2) GTEST_SKIP() << "needs two ranks";
  // Two parameters of one size in groups of their own: rank 0 gathers 'a' while the others
  // gather 'b'. The collectives look alike (an all-gather of as many floats); what they
  // carry differs, and half of one with half of the other must not come back as success.
  zrt_engine_params_t p = basic(3, ZRT_DTYPE_FP32);
  p.field_mask |= ZRT_ENGINE_PARAM_FIELD_REDUCE_BUCKET_BYTES;
  p.reduce_bucket_bytes = 4096;
  Engine e;
  CHECK_OK(zrt_engine_create(test::context(), &p, &e.e));
  int64_t shape = 1024;
  zrt_param_h a, b;
  CHECK_OK(zrt_param_register(e.e, "a", ZRT_DTYPE_FP32, 1, &shape, &a));
  CHECK_OK(zrt_param_register(e.e, "b", ZRT_DTYPE_FP32, 1, &shape, &b));
  CHECK_OK(zrt_engine_commit(e.e));
  std::vector<float> va(1024, 1.0f), vb(1024, 2.0f);
  CHECK_OK(zrt_param_set(e.e, a, va.data(), ZRT_DTYPE_FP32));
  CHECK_OK(zrt_param_set(e.e, b, vb.data(), ZRT_DTYPE_FP32));
  const zrt_status_t st = zrt_param_gather(e.e, test::rank() == 0 ? a : b);
  EXPECT_EQ(st, ZRT_ERR_MISMATCH) << test::last_error();
  if (st != ZRT_SUCCESS) {
    mentions("the ranks exchange different data: this rank posted it for the stage-3 gather");
    mentions("the ranks posted it for buckets");
  } else {
    zrt_param_release(e.e, test::rank() == 0 ? a : b);
  }
  EXPECT_TRUE(test::all_ranks(st == ZRT_ERR_MISMATCH));
  // The engine goes on: the same gather on every rank now brings the right values.
  CHECK_OK(zrt_param_gather(e.e, b));
  void *ptr = nullptr;
  CHECK_OK(zrt_param_data(e.e, b, &ptr));
  EXPECT_EQ(std::memcmp(ptr, vb.data(), 1024 * 4), 0);
  CHECK_OK(zrt_param_release(e.e, b));
}

TEST(EngineReports, OnlyTheFieldsOfTheMaskAreWrittenAndUnknownBitsFailEveryRank) {
  zrt_engine_params_t p = basic(2, ZRT_DTYPE_FP32);
  Engine e;
  CHECK_OK(zrt_engine_create(test::context(), &p, &e.e));
  int64_t shape[2] = {3, 5};
  zrt_param_h h;
  CHECK_OK(zrt_param_register(e.e, "w", ZRT_DTYPE_FP32, 2, shape, &h));
  CHECK_OK(zrt_engine_commit(e.e));
  auto ready = [&] {
    void *g = nullptr;
    ASSERT_EQ(zrt_param_grad_data(e.e, h, &g), ZRT_SUCCESS);
    ASSERT_EQ(zrt_param_grad_ready(e.e, h), ZRT_SUCCESS);
  };

  // A field outside the mask keeps the caller's value.
  zrt_param_info_t info{};
  info.field_mask = ZRT_PARAM_INFO_FIELD_SHAPE;
  info.name = "untouched";
  CHECK_OK(zrt_param_info(e.e, h, &info));
  EXPECT_EQ(info.numel, 15);
  EXPECT_EQ(info.ndim, 2);
  EXPECT_STREQ(info.name, "untouched");
  info.field_mask = ZRT_PARAM_INFO_FIELD_ALL;
  CHECK_OK(zrt_param_info(e.e, h, &info));
  EXPECT_STREQ(info.name, "w");
  info.field_mask = uint64_t{1} << 40;
  EXPECT_EQ(zrt_param_info(e.e, h, &info), ZRT_ERR_INVALID_ARGUMENT);
  mentions("info_p->field_mask has unknown bits 0x10000000000");

  ready();
  zrt_step_report_t r{};
  r.field_mask = ZRT_STEP_REPORT_FIELD_STEP;
  r.grad_norm = -7;
  CHECK_OK(zrt_engine_step(e.e, &r));
  EXPECT_EQ(r.step, 1);
  EXPECT_EQ(r.grad_norm, -7);  // not asked for
  EXPECT_EQ(r.applied, 0);

  // One rank passes a mask this library does not know: the step fails on every rank before
  // it starts and changes nothing, so the same step retried with a good mask goes on with
  // the gradients already made ready.
  ready();
  r.field_mask =
      test::rank() == test::size() - 1 ? uint64_t{1} << 40 : uint64_t{ZRT_STEP_REPORT_FIELD_ALL};
  EXPECT_EQ(zrt_engine_step(e.e, &r), ZRT_ERR_INVALID_ARGUMENT);
  mentions(fmt::format("rank {}: report_p->field_mask has unknown bits 0x10000000000",
                       test::size() - 1));
  r.field_mask = ZRT_STEP_REPORT_FIELD_ALL;
  CHECK_OK(zrt_engine_step(e.e, &r));
  EXPECT_TRUE(r.applied);
  EXPECT_EQ(r.step, 2);

  // Names stay where zrt_param_info put them while more parameters are registered.
  Engine late;
  CHECK_OK(zrt_engine_create(test::context(), &p, &late.e));
  zrt_param_h first;
  CHECK_OK(zrt_param_register(late.e, "first", ZRT_DTYPE_FP32, 2, shape, &first));
  zrt_param_info_t named{};
  named.field_mask = ZRT_PARAM_INFO_FIELD_NAME;
  CHECK_OK(zrt_param_info(late.e, first, &named));
  for (int i = 0; i < 100; ++i) {
    zrt_param_h more;
    CHECK_OK(
        zrt_param_register(late.e, fmt::format("p{}", i).c_str(), ZRT_DTYPE_FP32, 2, shape, &more));
  }
  CHECK_OK(zrt_engine_commit(late.e));
  EXPECT_STREQ(named.name, "first");

  zrt_memory_report_t m{};
  m.field_mask = ZRT_MEMORY_REPORT_FIELD_TOTAL;
  m.parameters = -1;
  CHECK_OK(zrt_engine_memory(e.e, &m));
  EXPECT_GT(m.total, 0);
  EXPECT_EQ(m.parameters, -1);
  m.field_mask = ~uint64_t{0};
  EXPECT_EQ(zrt_engine_memory(e.e, &m), ZRT_ERR_INVALID_ARGUMENT);
}

TEST(OptimizerApi, AdamTakesDefaultsForUnsetFieldsAndRequiresLrAndStep) {
  const size_t n = 37;
  std::vector<float> w(n), m(n, 0), v(n, 0), g(n);
  for (size_t i = 0; i < n; ++i) {
    w[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
    g[i] = 0.05f * static_cast<float>(i % 5) - 0.1f;
  }
  std::vector<float> w0 = w;
  zrt_adam_args_t a{};
  a.field_mask = ZRT_ADAM_ARG_FIELD_LR | ZRT_ADAM_ARG_FIELD_STEP | ZRT_ADAM_ARG_FIELD_WEIGHT_DECAY;
  a.lr = 0.01;
  a.step = 1;
  a.weight_decay = 0.1;
  a.beta1 = a.beta2 = a.eps = a.grad_scale = 123;  // not in the mask: defaults apply
  CHECK_OK(zrt_optimizer_adam(test::context(), &a, w.data(), m.data(), v.data(), g.data(),
                              ZRT_DTYPE_FP32, n));
  for (size_t i = 0; i < n; ++i) {
    // AdamW's first step with beta 0.9 / 0.999, eps 1e-8: the update is lr * sign(g) (the
    // bias-corrected m / sqrt(v) is g / |g|), after a decay of lr * wd * w.
    double expect = w0[i] - 0.01 * 0.1 * w0[i];
    if (g[i] != 0)
      expect -= 0.01 * (g[i] > 0 ? 1 : -1) * std::fabs(g[i]) / (std::fabs(g[i]) + 1e-8);
    EXPECT_NEAR(w[i], expect, 1e-6) << i;
    EXPECT_NEAR(m[i], 0.1 * g[i], 1e-7) << i;
  }
  a.field_mask = ZRT_ADAM_ARG_FIELD_LR;
  EXPECT_EQ(zrt_optimizer_adam(test::context(), &a, w.data(), m.data(), v.data(), g.data(),
                               ZRT_DTYPE_FP32, n),
            ZRT_ERR_INVALID_ARGUMENT);
  mentions("args->step is required: set it and ZRT_ADAM_ARG_FIELD_STEP in args->field_mask");
  a.field_mask = ZRT_ADAM_ARG_FIELD_ALL | (uint64_t{1} << 33);
  EXPECT_EQ(zrt_optimizer_adam(test::context(), &a, w.data(), m.data(), v.data(), g.data(),
                               ZRT_DTYPE_FP32, n),
            ZRT_ERR_INVALID_ARGUMENT);
  mentions("args->field_mask has unknown bits 0x200000000");
}

// Ranks that ask for different engines (a rank-dependent branch in the program) are refused
// on every rank at creation, naming the key and both values, instead of walking into
// different collectives.
TEST(EngineErrors, DifferentSettingsOnTwoRanksAreRefusedOnEveryRank) {
  if (test::size() < 2) GTEST_SKIP() << "needs two ranks";
  zrt_engine_params_t p = basic(test::rank() == 1 ? 3 : 2, ZRT_DTYPE_FP32);
  zrt_engine_h e = nullptr;
  EXPECT_EQ(zrt_engine_create(test::context(), &p, &e), ZRT_ERR_MISMATCH);
  EXPECT_EQ(e, nullptr);
  mentions(
      "rank 1: the engine's settings differ from rank 0's: zero_optimization.stage is '3' "
      "here (params) but '2' on rank 0");
  // The context still works: the next engine, alike on every rank, is created.
  p = basic(2, ZRT_DTYPE_FP32);
  CHECK_OK(zrt_engine_create(test::context(), &p, &e));
  EXPECT_EQ(zrt_engine_destroy(e), ZRT_SUCCESS);
}
