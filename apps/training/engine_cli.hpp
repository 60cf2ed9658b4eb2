// The engine's command-line options, as both trainers take them: --zero-stage, --dtype,
// --deterministic, --device, --bucket-mb.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <optional>
#include <string>

#include "cli_checks.hpp"
#include "engine_model_state.hpp"

namespace training {

struct EngineCli {
  int zero_stage = 2;
  std::string dtype = "fp32";
  bool deterministic = false;
  std::string device = "host";
  std::optional<double> bucket_mb;

  void add_to(CLI::App &app) {
    app.add_option("--zero-stage", zero_stage,
                   "ZeRO stage: 0 data parallel, 1 optimizer state sharded, 2 and gradients, 3 "
                   "and parameters")
        ->check(CLI::Range(0, 3))
        ->capture_default_str();
    app.add_option("--dtype", dtype,
                   "parameters and gradients in the engine: fp32, or bf16 with fp32 master "
                   "weights (the model computes in fp32 either way)")
        ->check(CLI::IsMember({"fp32", "bf16"}))
        ->capture_default_str();
    app.add_flag("--deterministic", deterministic,
                 "reductions add in rank order: bitwise-identical results for every stage and "
                 "run at a given number of ranks");
    app.add_option("--device", device,
                   "where the engine's buffers live: host; device (the rank's GPU: on a Kokkos "
                   "build with CUDA the model computes on the engine's device buffers); auto "
                   "(device when every rank has one); emulated (zerort's emulated device, for "
                   "machines without a GPU)")
        ->check(CLI::IsMember({"host", "device", "auto", "emulated"}))
        ->capture_default_str();
    app.add_option("--bucket-mb", bucket_mb,
                   "gradient (and stage-3 gather) bucket size in MiB (default: zerort's, 25)")
        ->check(kPositive);
  }

  /// The engine's options for these settings, @p optimizer and first learning rate @p lr.
  EngineOptions options(const OptimizerConfig &optimizer, double lr) const {
    EngineOptions e;
    e.stage = zero_stage;
    e.dtype = dtype == "bf16" ? ZRT_DTYPE_BF16 : ZRT_DTYPE_FP32;
    e.deterministic = deterministic;
    e.memory = device == "host"   ? ZRT_ENGINE_MEMORY_HOST
               : device == "auto" ? ZRT_ENGINE_MEMORY_AUTO
                                  : ZRT_ENGINE_MEMORY_DEVICE;
    e.optimizer = optimizer;
    e.lr = lr;
    if (bucket_mb) e.reduce_bucket_bytes = static_cast<int64_t>(*bucket_mb * 1024 * 1024);
    return e;
  }

  /// Before zrt_init: the emulated device is a setting of the context
  /// (memory.device.emulate).
  void before_context() const {
    if (device == "emulated") setenv("ZRT_MEMORY_DEVICE_EMULATE", "1", 1);
  }
};

}  // namespace training
