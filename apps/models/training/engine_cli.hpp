// The engine's command-line options, as both trainers take them: --zero-stage, --dtype,
// --optimizer, --deterministic, --device, --bucket-mb. Each overrides what the
// configuration file (ZRT_CONFIG) says when it is given (training/job_settings.hpp).
#pragma once

#include <CLI/CLI.hpp>
#include <Kokkos_Macros.hpp>

#include <cstdlib>
#include <optional>
#include <string>

#include "cli_checks.hpp"
#include "job_settings.hpp"
#include "model_state.hpp"

namespace training {

// Where the engine lives unless told: with the model. A CUDA build computes on the GPU, so
// its engine goes there too (auto: the device, every rank having one, as the start-up
// check made sure); a host engine under a GPU model would copy every tensor each step.
#if defined(KOKKOS_ENABLE_CUDA)
inline constexpr const char *kDefaultEngineDevice = "auto";
#else
inline constexpr const char *kDefaultEngineDevice = "host";
#endif

struct EngineCli {
  int zero_stage = 2;
  std::string dtype = "fp32";
  std::string optimizer = "adamw";  // the trainer's default
  bool deterministic = false;
  std::string device = kDefaultEngineDevice;
  std::string offload_optimizer = "none";
  std::optional<double> bucket_mb;

  /// @p optimizer_help: the trainer's words for its default.
  void add_to(CLI::App &app, const std::string &optimizer_help) {
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
    app.add_option("--optimizer", optimizer, optimizer_help + "; adamw, adam, sgd or lamb")
        ->check(CLI::IsMember({"adamw", "adam", "sgd", "lamb"}))
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
    app.add_option("--offload-optimizer", offload_optimizer,
                   "ZeRO-Offload: cpu keeps the optimizer's state in pinned host memory and "
                   "steps it on the CPU, the engine's other buffers on the device (--device "
                   "device, stage 1-3); none keeps it with the rest")
        ->check(CLI::IsMember({"none", "cpu"}))
        ->capture_default_str();
    app.add_option("--bucket-mb", bucket_mb,
                   "gradient (and stage-3 gather) bucket size in MiB (default: zerort's, 25)")
        ->check(kPositive);
  }

  zrt_optimizer_t optimizer_kind() const {
    return optimizer == "lamb"   ? ZRT_OPTIMIZER_LAMB
           : optimizer == "adam" ? ZRT_OPTIMIZER_ADAM
           : optimizer == "sgd"  ? ZRT_OPTIMIZER_SGD
                                 : ZRT_OPTIMIZER_ADAMW;
  }

  /// These options into @p t, each with whether @p app's command line gave it.
  void fill(TrainerSettings &t, const CLI::App &app) const {
    t.stage = {zero_stage, app.count("--zero-stage") > 0};
    t.dtype = {dtype, app.count("--dtype") > 0};
    t.optimizer = {optimizer_kind(), app.count("--optimizer") > 0};
    t.deterministic = {deterministic, app.count("--deterministic") > 0};
    t.device = {device == "emulated" ? "device" : device, app.count("--device") > 0};
    t.offload_optimizer = {offload_optimizer == "cpu", app.count("--offload-optimizer") > 0};
    t.bucket_mb = bucket_mb;
  }

  /// The optimizer's values, the batch and the steps both trainers take into @p t, each
  /// with whether @p app's command line gave it.
  static void fill_training(TrainerSettings &t, const OptimizerConfig &o, int batch, int64_t steps,
                            const CLI::App &app) {
    auto given = [&](const char *option) { return app.count(option) > 0; };
    t.beta1 = {o.beta1, given("--beta1")};
    t.beta2 = {o.beta2, given("--beta2")};
    t.eps = {o.eps, given("--eps")};
    t.weight_decay = {o.weight_decay, given("--weight-decay")};
    t.grad_clip = {o.grad_clip, given("--grad-clip")};
    t.accumulation = {o.accumulation_steps, given("--grad-accum")};
    t.batch = {batch, given("--batch")};
    t.steps = {steps, given("--steps")};
  }

  /// Before zrt_init: the emulated device is a setting of the context
  /// (memory.device.emulate).
  void before_context() const {
    if (device == "emulated") setenv("ZRT_MEMORY_DEVICE_EMULATE", "1", 1);
  }
};

}  // namespace training
