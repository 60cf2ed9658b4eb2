// The engine on device memory (engine.memory_space = device) through the public API: its
// memory report against the ZeRO and ZeRO-Offload formulas, checkpoints that move between
// host and device engines, and bad input. On the emulated device (ctest's
// mpi_emulated_device); without a device the device tests skip and the refusal is tested.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "support/device_copy.hpp"
#include "support/mpi_fixture.hpp"

namespace {

using test::mentions;

using Engine = test::EngineOwner;

zrt_engine_params_t params_of(int stage, zrt_dtype_t dtype, zrt_engine_memory_t memory,
                              bool offload) {
  zrt_engine_params_t p = {};
  p.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE | ZRT_ENGINE_PARAM_FIELD_COMPUTE_DTYPE |
                 ZRT_ENGINE_PARAM_FIELD_MEMORY_SPACE | ZRT_ENGINE_PARAM_FIELD_OFFLOAD_OPTIMIZER |
                 ZRT_ENGINE_PARAM_FIELD_REDUCE_BUCKET_BYTES | ZRT_ENGINE_PARAM_FIELD_DETERMINISTIC |
                 ZRT_ENGINE_PARAM_FIELD_LR;
  p.stage = stage;
  p.compute_dtype = dtype;
  p.memory_space = memory;
  p.offload_optimizer = offload;
  p.reduce_bucket_bytes = 1 << 20;
  p.deterministic = 1;
  p.lr = 0.01;
  return p;
}

const std::vector<int64_t> kSizes = {393216 + 7, 1536 + 1, 589824 - 3, 768, 196608 + 11, 33};

void make(Engine &e, const zrt_engine_params_t &p) {
  CHECK_OK(zrt_engine_create(test::context(), &p, &e.e));
  for (size_t i = 0; i < kSizes.size(); ++i) {
    zrt_param_h h;
    CHECK_OK(
        zrt_param_register(e.e, fmt::format("t{}", i).c_str(), p.compute_dtype, 1, &kSizes[i], &h));
    e.params.push_back(h);
  }
  CHECK_OK(zrt_engine_commit(e.e));
}

}  // namespace

// Settings (engine.offload_step, parameter offload) on top of params_of's.
zrt_engine_params_t with_settings(zrt_engine_params_t p, const char *json) {
  p.field_mask |= ZRT_ENGINE_PARAM_FIELD_SETTINGS;
  p.settings = json;
  return p;
}

constexpr const char *kAfterBackward = R"({"engine": {"offload_step": "after_backward"}})";
constexpr const char *kOffloadParam =
    R"({"zero_optimization": {"offload_param": {"device": "cpu"}}})";

TEST(DeviceEngineMemory, ReportMatchesTheZeroAndZeroOffloadFormulas) {
  ZRT_SKIP_WITHOUT_DEVICE();
  const double n = test::size();
  enum Mode { None, AfterBackward, DuringBackward, Params };
  for (int stage = 1; stage <= 3; ++stage)
    for (Mode mode : {None, AfterBackward, DuringBackward, Params}) {
      if (mode == Params && stage != 3) continue;
      SCOPED_TRACE(fmt::format("bf16 stage {} offload mode {}", stage, static_cast<int>(mode)));
      Engine e;
      zrt_engine_params_t p =
          params_of(stage, ZRT_DTYPE_BF16, ZRT_ENGINE_MEMORY_DEVICE, mode != None);
      if (mode == AfterBackward) p = with_settings(p, kAfterBackward);
      if (mode == Params) p = with_settings(p, kOffloadParam);
      make(e, p);
      zrt_memory_report_t m{};
      m.field_mask = ZRT_MEMORY_REPORT_FIELD_ALL;
      CHECK_OK(zrt_engine_memory(e.e, &m));
      const double P = static_cast<double>(m.parameter_count);
      // Model states by place (the ZeRO paper's K = 12 for Adam, 16-bit compute): without
      // offload everything is on the device; with it the fp32 master weights, the moments
      // and the gradient shard are in pinned host memory (ZeRO-Offload: 12P/N + 2P/N), and
      // the device keeps the parameters (and stage 1's full gradient). The CPU step during
      // backward adds its saved copy of the weights and moments (12P/N) and the staged
      // 16-bit update (2P/N); parameter offload moves stage 3's shard (2P/N) to the host.
      const double all[] = {0, 4 * P + 12 * P / n, 2 * P + 14 * P / n, 16 * P / n};
      const double device_offload[] = {0, 4 * P, 2 * P, 2 * P / n};
      const double device_states = mode == None     ? all[stage]
                                   : mode == Params ? 0
                                                    : device_offload[stage];
      const double host_states = mode == None             ? 0
                                 : mode == AfterBackward  ? 14 * P / n
                                 : mode == DuringBackward ? 28 * P / n
                                                          : 30 * P / n;
      EXPECT_NEAR(static_cast<double>(m.device_bytes - m.buckets), device_states,
                  0.02 * device_states + 4096);
      EXPECT_NEAR(static_cast<double>(m.host_bytes), host_states, 0.02 * host_states + 4096);
      EXPECT_EQ(m.device_bytes + m.host_bytes, m.total);
      EXPECT_GT(m.buckets, 0);
    }
}

TEST(DeviceEngineCheckpoint, AFileSavedOnTheDeviceLoadsOnTheHostAndBack) {
  ZRT_SKIP_WITHOUT_DEVICE();
  int pid = static_cast<int>(getpid());  // rank 0's names the file every rank writes
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const std::string path = fmt::format("/tmp/zrt_device_ckpt_{}.h5", pid);
  std::vector<std::vector<float>> saved;
  {
    Engine dev;
    make(dev, params_of(2, ZRT_DTYPE_BF16, ZRT_ENGINE_MEMORY_DEVICE, false));
    for (size_t t = 0; t < dev.params.size(); ++t) {
      std::vector<float> v(static_cast<size_t>(kSizes[t]));
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = 0.01f * static_cast<float>((i * 7 + t) % 101) - 0.5f;
      CHECK_OK(zrt_param_set(dev.e, dev.params[t], v.data(), ZRT_DTYPE_FP32));
    }
    for (int step = 0; step < 2; ++step) {
      for (size_t t = 0; t < dev.params.size(); ++t) {
        void *g = nullptr;
        CHECK_OK(zrt_param_grad_data(dev.e, dev.params[t], &g));
        std::vector<uint16_t> g16(static_cast<size_t>(kSizes[t]));
        for (size_t i = 0; i < g16.size(); ++i)
          g16[i] = static_cast<uint16_t>(0x3c00 + (i + step + test::rank()) % 64);  // bf16 ~1.x
        test::device_copy(g, g16.data(), g16.size() * sizeof(uint16_t));
        CHECK_OK(zrt_param_grad_ready(dev.e, dev.params[t]));
      }
      CHECK_OK(zrt_engine_step(dev.e, nullptr));
    }
    CHECK_OK(zrt_checkpoint_save(dev.e, path.c_str(), nullptr));
    for (size_t t = 0; t < dev.params.size(); ++t) {
      saved.emplace_back(static_cast<size_t>(kSizes[t]));
      CHECK_OK(zrt_param_get(dev.e, dev.params[t], saved.back().data(), ZRT_DTYPE_FP32));
    }
  }
  for (zrt_engine_memory_t memory : {ZRT_ENGINE_MEMORY_HOST, ZRT_ENGINE_MEMORY_DEVICE})
    for (int stage : {1, 3}) {
      SCOPED_TRACE(
          fmt::format("{} stage {}", memory == ZRT_ENGINE_MEMORY_HOST ? "host" : "device", stage));
      Engine e;
      make(e, params_of(stage, ZRT_DTYPE_BF16, memory, false));
      CHECK_OK(zrt_checkpoint_load(e.e, path.c_str()));
      for (size_t t = 0; t < e.params.size(); ++t) {
        std::vector<float> got(static_cast<size_t>(kSizes[t]));
        CHECK_OK(zrt_param_get(e.e, e.params[t], got.data(), ZRT_DTYPE_FP32));
        EXPECT_EQ(std::memcmp(got.data(), saved[t].data(), got.size() * 4), 0) << "tensor " << t;
      }
    }
  MPI_Barrier(MPI_COMM_WORLD);
  if (test::rank() == 0) std::remove(path.c_str());
}

namespace {

// One step of test gradients (bf16, about 1.x) on every parameter.
void bf16_step(Engine &e, int step) {
  for (size_t t = 0; t < e.params.size(); ++t) {
    void *g = nullptr;
    CHECK_OK(zrt_param_grad_data(e.e, e.params[t], &g));
    std::vector<uint16_t> g16(static_cast<size_t>(kSizes[t]));
    for (size_t i = 0; i < g16.size(); ++i)
      g16[i] = static_cast<uint16_t>(0x3c00 + (i * 3 + step + test::rank()) % 64);
    test::device_copy(g, g16.data(), g16.size() * sizeof(uint16_t));
    CHECK_OK(zrt_param_grad_ready(e.e, e.params[t]));
  }
  CHECK_OK(zrt_engine_step(e.e, nullptr));
}

std::vector<std::vector<float>> all_params(Engine &e) {
  std::vector<std::vector<float>> out;
  for (size_t t = 0; t < e.params.size(); ++t) {
    out.emplace_back(static_cast<size_t>(kSizes[t]));
    EXPECT_EQ(zrt_param_get(e.e, e.params[t], out.back().data(), ZRT_DTYPE_FP32), ZRT_SUCCESS)
        << test::last_error();
  }
  return out;
}

constexpr const char *kHalfOffloaded =
    R"({"zero_optimization": {"offload_optimizer": {"ratio": 0.5}}})";

}  // namespace

// A partial offload's state is in two places: a checkpoint holds all of it (weights and
// moments), saved synchronously or in the background, and loads into a whole offload, a
// partial one at another stage, or a host engine, which then step alike.
TEST(DeviceEngineCheckpoint, APartialOffloadSavesAndLoadsItsStateInBothPlaces) {
  ZRT_SKIP_WITHOUT_DEVICE();
  int pid = static_cast<int>(getpid());
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  for (bool background : {false, true}) {
    SCOPED_TRACE(background ? "background save" : "synchronous save");
    const std::string path = fmt::format("/tmp/zrt_partial_ckpt_{}_{}.h5", pid, background);
    std::vector<std::vector<float>> after_next;  // the saver's parameters one step later
    {
      Engine saver;
      make(saver, with_settings(params_of(2, ZRT_DTYPE_BF16, ZRT_ENGINE_MEMORY_DEVICE, true),
                                kHalfOffloaded));
      for (size_t t = 0; t < saver.params.size(); ++t) {
        std::vector<float> v(static_cast<size_t>(kSizes[t]));
        for (size_t i = 0; i < v.size(); ++i)
          v[i] = 0.01f * static_cast<float>((i * 7 + t) % 101) - 0.5f;
        CHECK_OK(zrt_param_set(saver.e, saver.params[t], v.data(), ZRT_DTYPE_FP32));
      }
      for (int step = 0; step < 2; ++step)
        bf16_step(saver, step);
      zrt_request_h request = nullptr;
      if (background) {
        CHECK_OK(zrt_checkpoint_save_post(saver.e, path.c_str(), nullptr, &request));
      } else {
        CHECK_OK(zrt_checkpoint_save(saver.e, path.c_str(), nullptr));
      }
      bf16_step(saver, 2);  // changes the state while a background save may still write
      if (background) {
        CHECK_OK(zrt_request_wait(request));
        CHECK_OK(zrt_request_free(request));
      }
      after_next = all_params(saver);
    }
    struct Loader {
      const char *name;
      zrt_engine_params_t params;
    };
    const Loader loaders[] = {
        {"host stage 1", params_of(1, ZRT_DTYPE_BF16, ZRT_ENGINE_MEMORY_HOST, false)},
        {"whole offload stage 2", params_of(2, ZRT_DTYPE_BF16, ZRT_ENGINE_MEMORY_DEVICE, true)},
        {"partial offload stage 3",
         with_settings(params_of(3, ZRT_DTYPE_BF16, ZRT_ENGINE_MEMORY_DEVICE, true),
                       kHalfOffloaded)},
    };
    for (const Loader &l : loaders) {
      SCOPED_TRACE(l.name);
      Engine e;
      make(e, l.params);
      CHECK_OK(zrt_checkpoint_load(e.e, path.c_str()));
      bf16_step(e, 2);  // from the loaded weights and moments
      const std::vector<std::vector<float>> got = all_params(e);
      for (size_t t = 0; t < got.size(); ++t)
        EXPECT_EQ(std::memcmp(got[t].data(), after_next[t].data(), got[t].size() * 4), 0)
            << "tensor " << t;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (test::rank() == 0) std::remove(path.c_str());
  }
}

// The step report's offload times: with ZeRO-Offload on the device the stream's time on
// the copies (gradient shards down, parameters back up) and the part the host waited
// for, which cannot exceed what it waited for at all; nothing without offload or on the
// host, and nothing on a micro-step that does not end an accumulation.
TEST(DeviceEngineOffload, TheStepReportTimesTheCopiesAndWhatNothingHid) {
  ZRT_SKIP_WITHOUT_DEVICE();
  struct Case {
    zrt_engine_memory_t memory;
    bool offload;
  };
  for (Case c : {Case{ZRT_ENGINE_MEMORY_DEVICE, true}, Case{ZRT_ENGINE_MEMORY_DEVICE, false},
                 Case{ZRT_ENGINE_MEMORY_HOST, false}}) {
    SCOPED_TRACE(fmt::format("{} offload {}",
                             c.memory == ZRT_ENGINE_MEMORY_HOST ? "host" : "device", c.offload));
    zrt_engine_params_t p = params_of(2, ZRT_DTYPE_BF16, c.memory, c.offload);
    p.field_mask |= ZRT_ENGINE_PARAM_FIELD_GRADIENT_ACCUMULATION_STEPS;
    p.gradient_accumulation_steps = 2;
    Engine e;
    make(e, p);
    for (int micro = 0; micro < 2; ++micro) {
      for (size_t t = e.params.size(); t-- > 0;) {
        void *g = nullptr;
        CHECK_OK(zrt_param_grad_data(e.e, e.params[t], &g));
        std::vector<uint16_t> g16(static_cast<size_t>(kSizes[t]), 0x3c00);  // bf16 1.0
        test::device_copy(g, g16.data(), g16.size() * sizeof(uint16_t));
        CHECK_OK(zrt_param_grad_ready(e.e, e.params[t]));
      }
      zrt_step_report_t r{};
      r.field_mask = ZRT_STEP_REPORT_FIELD_APPLIED | ZRT_STEP_REPORT_FIELD_OFFLOAD_TIMES |
                     ZRT_STEP_REPORT_FIELD_OFFLOAD_CPU;
      r.offload_copy_seconds = r.offload_exposed_seconds = -1;
      r.offload_cpu_seconds = r.offload_cpu_exposed_seconds = -1;
      const auto t0 = std::chrono::steady_clock::now();
      CHECK_OK(zrt_engine_step(e.e, &r));
      const double step_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_EQ(r.applied, micro == 1);
      if (micro == 1 && c.memory == ZRT_ENGINE_MEMORY_DEVICE && c.offload) {
        EXPECT_GT(r.offload_copy_seconds, 0.0);
        EXPECT_GE(r.offload_exposed_seconds, 0.0);
        EXPECT_LE(r.offload_exposed_seconds, step_seconds + 1.0);
        // The CPU's update ran during backward: some of it, at least, took time, and the
        // step cannot have waited for more of it than the whole call took.
        EXPECT_GT(r.offload_cpu_seconds, 0.0);
        EXPECT_GE(r.offload_cpu_exposed_seconds, 0.0);
        EXPECT_LE(r.offload_cpu_exposed_seconds, step_seconds + 1e-3);
        if (test::rank() == 0)
          std::printf(
              "  ZeRO-Offload copies %.3f ms, of which the host waited %.3f ms; CPU step %.3f "
              "ms, of which the step waited %.3f ms\n",
              1e3 * r.offload_copy_seconds, 1e3 * r.offload_exposed_seconds,
              1e3 * r.offload_cpu_seconds, 1e3 * r.offload_cpu_exposed_seconds);
      } else {
        EXPECT_EQ(r.offload_copy_seconds, 0.0);
        EXPECT_EQ(r.offload_exposed_seconds, 0.0);
        EXPECT_EQ(r.offload_cpu_seconds, 0.0);
        EXPECT_EQ(r.offload_cpu_exposed_seconds, 0.0);
      }
    }
  }
}

TEST(DeviceEngineErrors, DeviceValuesAndForeignStreamsAreRefused) {
  ZRT_SKIP_WITHOUT_DEVICE();
  Engine e;
  make(e, params_of(2, ZRT_DTYPE_FP32, ZRT_ENGINE_MEMORY_DEVICE, false));
  void *data = nullptr;
  CHECK_OK(zrt_param_data(e.e, e.params[0], &data));
  EXPECT_EQ(zrt_param_set(e.e, e.params[1], data, ZRT_DTYPE_FP32), ZRT_ERR_INVALID_ARGUMENT);
  mentions("values of 't1' are device memory: zrt_param_set reads host memory");
  int not_a_stream = 0;
  // (On a GPU a pointer that is no cudaStream_t is undefined behaviour for CUDA itself.)
  if (!test::device_is_gpu()) {
    EXPECT_EQ(zrt_engine_set_stream(e.e, &not_a_stream), ZRT_ERR_INVALID_ARGUMENT);
    mentions("but the device is emulated");
  }
  CHECK_OK(zrt_engine_set_stream(e.e, nullptr));

  // A host engine has no device work to order with a stream.
  Engine host;
  make(host, params_of(2, ZRT_DTYPE_FP32, ZRT_ENGINE_MEMORY_HOST, false));
  EXPECT_EQ(zrt_engine_set_stream(host.e, &not_a_stream), ZRT_ERR_INVALID_ARGUMENT);
  mentions("the engine lives in host memory");
}

TEST(EngineErrors, DeviceMemoryWithoutADeviceIsRefusedOnEveryRankAndAutoFallsBack) {
  if (test::device_missing().empty()) GTEST_SKIP() << "this rank has a device";
  zrt_engine_params_t p = params_of(2, ZRT_DTYPE_FP32, ZRT_ENGINE_MEMORY_DEVICE, false);
  zrt_engine_h e = nullptr;
  EXPECT_EQ(zrt_engine_create(test::context(), &p, &e), ZRT_ERR_NOT_SUPPORTED);
  mentions("engine.memory_space is device, but this rank has no device");
  mentions("memory.device.emulate");
  // auto: the host, with nothing said.
  p.memory_space = ZRT_ENGINE_MEMORY_AUTO;
  Engine a;
  make(a, p);
  zrt_memory_report_t m{};
  m.field_mask = ZRT_MEMORY_REPORT_FIELD_ALL;
  CHECK_OK(zrt_engine_memory(a.e, &m));
  EXPECT_EQ(m.device_bytes, 0);
  EXPECT_EQ(m.host_bytes, m.total);
  p.memory_space = static_cast<zrt_engine_memory_t>(7);
  EXPECT_EQ(zrt_engine_create(test::context(), &p, &e), ZRT_ERR_INVALID_ARGUMENT);
  mentions("params->memory_space is 7: accepted values are ZRT_ENGINE_MEMORY_HOST");
}
