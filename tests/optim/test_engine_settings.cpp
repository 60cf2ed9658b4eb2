// The engine's settings act or are refused: DeepSpeed's scheduler drives the rate of every
// update (and refuses the program's), "auto" is the program's value or an error naming the
// key, the batch sizes set the micro-steps, keys that describe what zerort does are checked
// against the engine, params->settings layers keys like the other fields, and a Hugging
// Face Trainer's ds_config.json loads and acts.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/mpi_fixture.hpp"

namespace {

using test::mentions;

constexpr int64_t kSettingsElems = 64;

// CHECK_OK for helpers that return a value.
#define SETTINGS_OK(call) EXPECT_EQ((call), ZRT_SUCCESS) << #call << ": " << test::last_error()

// An engine of one fp32 parameter "w" of kSettingsElems elements, made with `settings`
// (params->settings; empty: none) and `p`'s other fields, on `ctx`.
zrt_status_t make_settings_engine(zrt_context_h ctx, test::EngineOwner &e,
                                  const std::string &settings, zrt_engine_params_t p = {}) {
  if (!settings.empty()) {
    p.field_mask |= ZRT_ENGINE_PARAM_FIELD_SETTINGS;
    p.settings = settings.c_str();
  }
  zrt_status_t st = zrt_engine_create(ctx, &p, &e.e);
  if (st != ZRT_SUCCESS) return st;
  zrt_param_h h = nullptr;
  const int64_t shape = kSettingsElems;
  SETTINGS_OK(zrt_param_register(e.e, "w", ZRT_DTYPE_FP32, 1, &shape, &h));
  e.params.push_back(h);
  SETTINGS_OK(zrt_engine_commit(e.e));
  return ZRT_SUCCESS;
}

// One micro-step whose gradient is `g` in every element on every rank.
zrt_step_report_t settings_micro_step(test::EngineOwner &e, float g) {
  zrt_param_h h = e.params[0];
  SETTINGS_OK(zrt_param_gather(e.e, h));
  void *grad = nullptr;
  SETTINGS_OK(zrt_param_grad_data(e.e, h, &grad));
  for (int64_t i = 0; i < kSettingsElems; ++i)
    static_cast<float *>(grad)[i] += g;
  SETTINGS_OK(zrt_param_grad_ready(e.e, h));
  SETTINGS_OK(zrt_param_release(e.e, h));
  zrt_step_report_t r{};
  r.field_mask = ZRT_STEP_REPORT_FIELD_ALL;
  SETTINGS_OK(zrt_engine_step(e.e, &r));
  return r;
}

float settings_weight(test::EngineOwner &e) {
  std::vector<float> w(kSettingsElems);
  SETTINGS_OK(zrt_param_get(e.e, e.params[0], w.data(), ZRT_DTYPE_FP32));
  return w[0];
}

nlohmann::json settings_describe(zrt_engine_h e) {
  size_t n = 0;
  SETTINGS_OK(zrt_engine_describe(e, nullptr, 0, &n));
  std::string s(n + 1, '\0');
  SETTINGS_OK(zrt_engine_describe(e, s.data(), s.size(), &n));
  s.resize(n);
  return nlohmann::json::parse(s);
}

std::string settings_file(const std::string &name, const std::string &text) {
  std::string path =
      ::testing::TempDir() + fmt::format("zrt_settings_{}_{}_{}", getpid(), test::rank(), name);
  std::ofstream(path) << text;
  return path;
}

// A context over MPI_COMM_WORLD that reads `file`, finalized when the test leaves.
struct FileContext {
  zrt_context_h ctx = nullptr;
  explicit FileContext(const std::string &file) {
    zrt_init_params_t ip = {};
    ip.field_mask = ZRT_INIT_PARAM_FIELD_CONFIG_FILE;
    ip.config_file = file.c_str();
    SETTINGS_OK(zrt_init(MPI_COMM_WORLD, &ip, &ctx));
  }
  ~FileContext() {
    if (ctx) zrt_finalize(ctx);
  }
};

// DeepSpeed's WarmupDecayLR with total_num_steps 10, warmup_min_lr 1e-5, warmup_max_lr
// 1e-3, warmup_num_steps 3 (log): the rate of updates 0..6, as DeepSpeed's engine runs them
// (tests/optim/lr_scheduler_reference.py).
constexpr double kDecayRates[] = {1e-05,
                                  1e-05,
                                  0.0006346204560357427,
                                  0.001,
                                  0.001,
                                  0.0008585714285714286,
                                  0.0007171428571428572};

}  // namespace

TEST(EngineScheduler, EveryUpdateRunsAtTheFilesSchedulerRate) {
  const std::string file = settings_file("decay.json", R"({
    "optimizer": {"type": "SGD", "params": {"lr": 0.5}},
    "gradient_accumulation_steps": 2,
    "scheduler": {"type": "WarmupDecayLR",
                  "params": {"total_num_steps": 10, "warmup_min_lr": 1e-5,
                             "warmup_max_lr": 1e-3, "warmup_num_steps": 3}}})");
  FileContext c(file);
  for (int stage : {0, 3}) {
    SCOPED_TRACE(fmt::format("stage {}", stage));
    zrt_engine_params_t p = {};
    p.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE;
    p.stage = stage;
    test::EngineOwner e;
    CHECK_OK(make_settings_engine(c.ctx, e, "", p));
    const nlohmann::json d = settings_describe(e.e);
    EXPECT_EQ(d["scheduler"]["type"], "WarmupDecayLR");
    EXPECT_NE(d["scheduler"]["source"].get<std::string>().find(file), std::string::npos);
    double expected_weight = 0;
    size_t update = 0;
    for (int call = 0; call < 12; ++call) {
      // The third update's gradient is NaN: skipped on every rank, and the scheduler stays.
      const bool nan = call / 2 == 2;
      const zrt_step_report_t r =
          settings_micro_step(e, nan && call % 2 == 1 ? std::nanf("") : 1.0f);
      EXPECT_DOUBLE_EQ(r.lr, kDecayRates[update]) << "call " << call;
      if (call % 2 == 0) {
        EXPECT_EQ(r.applied, 0);  // the first micro-step of two
        continue;
      }
      if (nan) {
        EXPECT_EQ(r.skipped, 1);
        continue;
      }
      EXPECT_EQ(r.applied, 1) << "call " << call;
      // SGD from 0 with a gradient of 1 (summed over 2 micro-steps, averaged): w -= lr.
      expected_weight -= static_cast<double>(static_cast<float>(r.lr));
      EXPECT_NEAR(settings_weight(e), expected_weight, 1e-7) << "update " << update;
      ++update;
    }
    EXPECT_EQ(update, 5u);
  }
}

TEST(EngineScheduler, TheProgramsRateIsRefusedWhileASchedulerRunsUnlessItTurnsItOff) {
  test::EngineOwner e;
  CHECK_OK(make_settings_engine(test::context(), e,
                                R"({"scheduler": {"type": "WarmupLR",
                                                  "params": {"warmup_num_steps": 4}}})"));
  EXPECT_EQ(zrt_engine_set_lr(e.e, 0.1), ZRT_ERR_INVALID_STATE);
  mentions("zrt_engine_set_lr: the learning rate follows the scheduler WarmupLR");
  mentions("the program's params");
  mentions(R"({"scheduler": {"type": "none"}})");
  // WarmupLR without warmup_max_lr peaks at the optimizer's rate (DeepSpeed's rule).
  EXPECT_DOUBLE_EQ(settings_describe(e.e)["scheduler"]["warmup_max_lr"].get<double>(), 0.001);

  // A file's scheduler set aside by the program: its rate is the program's.
  const std::string file = settings_file("warmup.json", R"({"scheduler": {"type": "WarmupLR",
                                          "params": {"warmup_num_steps": 4, "warmup_min_lr": 0}}})");
  FileContext c(file);
  test::EngineOwner mine;
  CHECK_OK(make_settings_engine(c.ctx, mine, R"({"scheduler": {"type": "none"}})"));
  CHECK_OK(zrt_engine_set_lr(mine.e, 0.25));
  EXPECT_DOUBLE_EQ(settings_micro_step(mine, 1.0f).lr, 0.25);
  // A scheduler's parameter without a scheduler is named.
  test::EngineOwner lone;
  EXPECT_EQ(make_settings_engine(test::context(), lone,
                                 R"({"scheduler": {"params": {"total_num_steps": 9}}})"),
            ZRT_ERR_CONFIG);
  mentions("scheduler.params.total_num_steps is set");
  mentions("no scheduler.type names a scheduler");
  test::EngineOwner wrong;
  EXPECT_EQ(make_settings_engine(test::context(), wrong,
                                 R"({"scheduler": {"type": "WarmupLR",
                                                   "params": {"cos_min_ratio": 0.1}}})"),
            ZRT_ERR_CONFIG);
  mentions("scheduler.params.cos_min_ratio");
  mentions("is not a parameter of WarmupLR");
}

TEST(EngineSettings, AutoIsTheProgramsValueAndUnfilledIsNamedAtCreate) {
  const std::string file = settings_file("auto.json", R"({
    "optimizer": {"type": "AdamW", "params": {"lr": "auto", "weight_decay": "auto"}},
    "gradient_clipping": "auto", "bf16": {"enabled": "auto"}})");
  FileContext c(file);
  test::EngineOwner bare;
  EXPECT_EQ(make_settings_engine(c.ctx, bare, ""), ZRT_ERR_CONFIG);
  mentions("is \"auto\"");
  mentions("_auto.json");  // rank 0's copy, whose failure every rank reports
  mentions("the program did not supply its value");

  zrt_engine_params_t p = {};
  p.field_mask = ZRT_ENGINE_PARAM_FIELD_LR | ZRT_ENGINE_PARAM_FIELD_COMPUTE_DTYPE |
                 ZRT_ENGINE_PARAM_FIELD_GRADIENT_CLIPPING;
  p.lr = 0.02;
  p.compute_dtype = ZRT_DTYPE_FP32;
  p.gradient_clipping = 1.5;
  test::EngineOwner missing;  // weight_decay still "auto"
  EXPECT_EQ(make_settings_engine(c.ctx, missing, "", p), ZRT_ERR_CONFIG);
  mentions("optimizer.params.weight_decay is \"auto\"");
  test::EngineOwner e;
  CHECK_OK(
      make_settings_engine(c.ctx, e, R"({"optimizer": {"params": {"weight_decay": 0.01}}})", p));
  const nlohmann::json d = settings_describe(e.e);
  EXPECT_DOUBLE_EQ(d["lr"].get<double>(), 0.02);
  EXPECT_DOUBLE_EQ(d["weight_decay"].get<double>(), 0.01);
  EXPECT_DOUBLE_EQ(d["gradient_clipping"].get<double>(), 1.5);
}

TEST(EngineSettings, BatchSizesSetTheMicroStepsAndMustMultiplyOut) {
  const int n = test::size();
  test::EngineOwner e;
  CHECK_OK(make_settings_engine(
      test::context(), e,
      fmt::format(R"({{"train_batch_size": {}, "train_micro_batch_size_per_gpu": 2}})", 6 * n)));
  const nlohmann::json d = settings_describe(e.e);
  EXPECT_EQ(d["gradient_accumulation_steps"], 3);
  EXPECT_EQ(d["train_micro_batch_size_per_gpu"], 2);
  EXPECT_EQ(settings_micro_step(e, 1).applied, 0);
  EXPECT_EQ(settings_micro_step(e, 1).applied, 0);
  EXPECT_EQ(settings_micro_step(e, 1).applied, 1);

  test::EngineOwner bad;
  EXPECT_EQ(make_settings_engine(test::context(), bad,
                                 fmt::format(R"({{"train_batch_size": {},
                                                 "train_micro_batch_size_per_gpu": 2,
                                                 "gradient_accumulation_steps": 2}})",
                                             6 * n)),
            ZRT_ERR_CONFIG);
  mentions(
      fmt::format("train_batch_size {} (from the program's params) is not "
                  "train_micro_batch_size_per_gpu 2",
                  6 * n));
  mentions(fmt::format("x {} rank(s) = {}", n, 4 * n));
}

TEST(EngineSettings, KeysOfWhatZerortDoesAreCheckedAgainstTheEngine) {
  struct Case {
    const char *settings;
    const char *message;  // empty: accepted
  };
  const Case cases[] = {
      {R"({"communication_data_type": "fp32"})", ""},
      {R"({"communication_data_type": "bf16"})",
       "communication_data_type is bf16 (from the program's params): zerort supports only the "
       "compute dtype, fp32"},
      {R"({"data_types": {"grad_accum_dtype": "fp16"}})", "data_types.grad_accum_dtype is fp16"},
      // Offload moves a device engine's state: refused on a host engine (this one), naming
      // the key; parameter offload needs stage 3 and the optimizer offloaded as well.
      {R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}})",
       "zero_optimization.offload_param.device cpu (from the program's params) moves a device "
       "engine's state to host memory, and this engine is in host memory (engine.memory_space "
       "host, from the built-in default)"},
      {R"({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})",
       "zero_optimization.offload_optimizer.device cpu (from the program's params) moves a "
       "device engine's state"},
      {R"({"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}},
           "engine": {"memory_space": "device"}})",
       "zero_optimization.offload_param.device cpu (from the program's params) offloads stage "
       "3's parameter shards: the engine is configured for stage 2"},
      {R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}},
           "engine": {"memory_space": "device"}})",
       "needs zero_optimization.offload_optimizer.device cpu as well"},
      {R"({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu",
                                                                   "pin_memory": false}},
           "engine": {"memory_space": "device"}})",
       "zero_optimization.offload_optimizer.pin_memory is false"},
      // Partial offload: a share of an offloaded state, in (0, 1], not with parameter
      // offload or LAMB.
      {R"({"zero_optimization": {"offload_optimizer": {"ratio": 0.5}}})",
       "is the share of an offloaded optimizer state, and the optimizer is not offloaded"},
      {R"({"zero_optimization": {"offload_optimizer": {"ratio": 0}}})",
       "zero_optimization.offload_optimizer.ratio is 0"},
      {R"({"zero_optimization": {"offload_optimizer": {"ratio": 1.5}}})",
       "it must be > 0 and <= 1"},
      {R"({"zero_optimization": {"offload_optimizer": {"ratio": 1}}})", ""},
      {R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"},
                                 "offload_optimizer": {"device": "cpu", "ratio": 0.5}},
           "engine": {"memory_space": "device"}})",
       "zero_optimization.offload_param.device cpu keeps the parameters it updates on the host: "
       "use one or the other"},
      {R"({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.5}},
           "optimizer": {"type": "Lamb"}, "engine": {"memory_space": "device"}})",
       "LAMB's trust ratios need every part of a parameter in one place"},
      {R"({"zero_optimization": {"offload_param": {"pin_memory": false}}})", ""},
      {R"({"zero_optimization": {"offload_optimizer": {"pin_memory": false}}})", ""},
      {R"({"zero_optimization": {"sub_group_size": 1e9}})", ""},
      {R"({"zero_optimization": {"sub_group_size": 1e8}})",
       "zero_optimization.sub_group_size is 100000000"},
      {R"({"zero_optimization": {"stage3_max_reuse_distance": 1e8}})",
       "zerort supports only zero_optimization.stage3_max_live_parameters (1000000000) and more"},
      {R"({"zero_optimization": {"stage3_prefetch_bucket_size": 123}})",
       "zerort supports only \"auto\" or zero_optimization.reduce_bucket_size (6553600 "
       "elements)"},
      {R"({"zero_optimization": {"stage3_prefetch_bucket_size": "auto"}})", ""},
      {R"({"optimizer": {"type": "SGD", "params": {"adam_w_mode": true}}})",
       "optimizer.params.adam_w_mode (from the program's params) is Adam's"},
      {R"({"wall_clock_breakdown": true})",
       "wall_clock_breakdown is true (from params->settings): zerort supports only false"},
      {R"({"zero_optimization": {"offload_param": {"nvme_path": "/nvme"}}})",
       "zero_optimization.offload_param.nvme_path (from params->settings) is not supported"},
      {R"({"tensorboard": {"enabled": true, "output_path": "tb"}})",
       "tensorboard (from params->settings) turns on tensorboard.enabled"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.settings);
    test::EngineOwner e;
    const zrt_status_t st = make_settings_engine(test::context(), e, c.settings);
    if (c.message[0] == '\0') {
      EXPECT_EQ(st, ZRT_SUCCESS) << test::last_error();
    } else {
      EXPECT_TRUE(st == ZRT_ERR_CONFIG || st == ZRT_ERR_NOT_SUPPORTED) << st;
      mentions(c.message);
    }
  }
  // adam_w_mode acts: DeepSpeed's Adam with it is AdamW.
  test::EngineOwner adam;
  CHECK_OK(make_settings_engine(test::context(), adam,
                                R"({"optimizer": {"type": "Adam",
                                                  "params": {"adam_w_mode": true}}})"));
  EXPECT_EQ(settings_describe(adam.e)["optimizer"], "adamw");
}

TEST(EngineSettings, ParamsSettingsRefuseContextKeysTwiceSetKeysAndBadText) {
  test::EngineOwner e;
  EXPECT_EQ(make_settings_engine(test::context(), e, R"({"comm": {"backend": "mpi"}})"),
            ZRT_ERR_INVALID_ARGUMENT);
  mentions("params->settings sets comm.backend, a setting of the context");
  mentions("ZRT_COMM_BACKEND");
  zrt_engine_params_t p = {};
  p.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE;
  p.stage = 1;
  EXPECT_EQ(make_settings_engine(test::context(), e, R"({"zero_optimization": {"stage": 3}})", p),
            ZRT_ERR_INVALID_ARGUMENT);
  mentions("params->settings sets zero_optimization.stage, which another field of params sets");
  EXPECT_EQ(make_settings_engine(test::context(), e, "[1, 2]"), ZRT_ERR_INVALID_ARGUMENT);
  mentions("params->settings is not a JSON object");
  EXPECT_EQ(make_settings_engine(test::context(), e, R"({"zero_optimisation": {"stage": 3}})"),
            ZRT_ERR_CONFIG);
  mentions("unknown key 'zero_optimisation.stage' in params->settings");
  p.field_mask = ZRT_ENGINE_PARAM_FIELD_SETTINGS;
  p.settings = nullptr;
  EXPECT_EQ(zrt_engine_create(test::context(), &p, &e.e), ZRT_ERR_INVALID_ARGUMENT);
  mentions("params->settings is NULL");
}

TEST(EngineSettings, StepsPerPrintWritesDeepSpeedsProgressLine) {
  // Rank 0 writes it to stderr, whatever log_level says: catch stderr in a file.
  const std::string path = settings_file("stderr.txt", "");
  fflush(stderr);
  const int saved = dup(2);
  FILE *out = std::fopen(path.c_str(), "w");
  dup2(fileno(out), 2);
  {
    test::EngineOwner e;
    CHECK_OK(make_settings_engine(test::context(), e, R"({"steps_per_print": 2})"));
    for (int i = 0; i < 4; ++i)
      settings_micro_step(e, 1);
  }
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::fclose(out);
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  if (test::rank() == 0) {
    EXPECT_NE(text.str().find("step 2: lr 0.001, loss scale 1, skipped steps 0"), std::string::npos)
        << text.str();
    EXPECT_NE(text.str().find("step 4: lr"), std::string::npos) << text.str();
    EXPECT_EQ(text.str().find("step 3:"), std::string::npos) << text.str();
  } else {
    EXPECT_EQ(text.str().find("step 2:"), std::string::npos) << text.str();
  }
  std::remove(path.c_str());
}

// The Hugging Face Trainer's ds_config.json files (zero2 and zero3 of its documentation),
// "auto" filled as a program fills it: they load and act.
TEST(EngineSettings, HuggingFaceTrainerConfigsLoadAndAct) {
  for (const char *name : {"ds_zero2_hf.json", "ds_zero3_hf.json"}) {
    SCOPED_TRACE(name);
    FileContext c(std::string(ZRT_TEST_SOURCE_DIR) + "/training/" + name);
    zrt_engine_params_t p = {};
    p.field_mask = ZRT_ENGINE_PARAM_FIELD_LR | ZRT_ENGINE_PARAM_FIELD_BETAS |
                   ZRT_ENGINE_PARAM_FIELD_EPS | ZRT_ENGINE_PARAM_FIELD_WEIGHT_DECAY |
                   ZRT_ENGINE_PARAM_FIELD_GRADIENT_CLIPPING | ZRT_ENGINE_PARAM_FIELD_COMPUTE_DTYPE;
    p.lr = 3e-3;
    p.beta1 = 0.9;
    p.beta2 = 0.95;
    p.eps = 1e-8;
    p.weight_decay = 0.1;
    p.gradient_clipping = 1.0;
    p.compute_dtype = ZRT_DTYPE_FP32;
    // What the file leaves "auto" (zero3's buckets: the hidden size squared, 128 here).
    const bool zero3 = name[7] == '3';
    nlohmann::json fill = {{"train_micro_batch_size_per_gpu", 4},
                           {"scheduler", {{"params", {{"warmup_num_steps", 10}}}}}};
    if (zero3) fill["zero_optimization"] = {{"reduce_bucket_size", 128 * 128}};
    {
      // The files offload the optimizer, which moves a device engine's state: on a host
      // engine the key is refused, naming where it came from and the way out.
      test::EngineOwner refused;
      EXPECT_EQ(make_settings_engine(c.ctx, refused, fill.dump(), p), ZRT_ERR_NOT_SUPPORTED);
      mentions(
          fmt::format("zero_optimization.offload_optimizer.device cpu (from {}/{}) moves "
                      "a device engine's state to host memory",
                      std::string(ZRT_TEST_SOURCE_DIR) + "/training", name));
      mentions("engine.memory_space host");
    }
    fill["zero_optimization"]["offload_optimizer"] = {{"device", "none"}};
    if (zero3) fill["zero_optimization"]["offload_param"] = {{"device", "none"}};
    test::EngineOwner e;
    CHECK_OK(make_settings_engine(c.ctx, e, fill.dump(), p));
    const nlohmann::json d = settings_describe(e.e);
    EXPECT_EQ(d["stage"], zero3 ? 3 : 2);
    EXPECT_EQ(d["offload_optimizer"], false);
    EXPECT_EQ(d["optimizer"], "adamw");
    EXPECT_EQ(d["gradient_accumulation_steps"], 1);
    EXPECT_EQ(d["train_batch_size"], 4 * test::size());
    EXPECT_EQ(d["scheduler"]["type"], "WarmupLR");
    EXPECT_DOUBLE_EQ(d["scheduler"]["warmup_min_lr"].get<double>(), 0);
    EXPECT_DOUBLE_EQ(d["scheduler"]["warmup_max_lr"].get<double>(), 3e-3);
    EXPECT_EQ(d["reduce_bucket_bytes"], zero3 ? 128 * 128 * 4 : 800000000);
    // WarmupLR, log warmup over 10 steps from 0: DeepSpeed's first two updates run at 0.
    EXPECT_DOUBLE_EQ(settings_micro_step(e, 1).lr, 0);
    EXPECT_DOUBLE_EQ(settings_micro_step(e, 1).lr, 0);
    EXPECT_DOUBLE_EQ(settings_micro_step(e, 1).lr, 3e-3 * std::log(2.0) * (1 / std::log(10.0)));
  }
}
