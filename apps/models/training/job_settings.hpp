// Which of the command line, the configuration file (ZRT_CONFIG, a DeepSpeed ds_config.json
// included), the environment and the trainer's own defaults sets each engine setting of a
// trainer's job, and the lines that say so at start-up.
//
// The rule, per setting: an option given on the command line wins over the file (the
// trainer sets that field of the engine's params); a value the file or the environment gives
// is left to them (the field stays unset, so the engine takes theirs, as it would for any
// program); "auto" in the file is filled with the trainer's value, as the Hugging Face
// Trainer fills it from its arguments (batch sizes, accumulation, learning rate, betas,
// epsilon, weight decay, clipping, the dtype, bucket sizes from the hidden size, the
// scheduler's warmup and total steps); anything else takes the trainer's default. The
// environment still wins over the command line (zerort's precedence), and the lines say so.
//
// The file's learning rate scheduler (scheduler.type) drives the rate unless the trainer's
// own schedule options (--warmup, --min-lr-frac, --decay-power) are given; then the
// trainer's schedule runs and the lines say the file's was set aside. --lr and --steps set
// the peak and the length of either.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config_view.hpp"
#include "lr_schedule.hpp"
#include "model_state.hpp"

namespace training {

/// A trainer's value of one setting, and whether the command line gave it.
template <class T>
struct Choice {
  T value{};
  bool given = false;
};

/// The engine settings a trainer has options for, with its defaults.
struct TrainerSettings {
  std::string program;  // "zrt-gpt2", for the lines
  Choice<int> stage;
  Choice<std::string> dtype;  // fp32 or bf16
  Choice<zrt_optimizer_t> optimizer;
  Choice<double> lr, beta1, beta2, eps, weight_decay, grad_clip;
  Choice<int> accumulation;             // --grad-accum
  Choice<int> batch;                    // --batch: samples per micro-step and rank
  std::optional<int64_t> global_batch;  // --global-batch
  Choice<bool> deterministic;
  Choice<std::string> device;                 // host, device, auto, emulated
  Choice<bool> offload_optimizer;             // --offload-optimizer cpu
  std::optional<double> bucket_mb;            // --bucket-mb
  int64_t hidden = 0;                         // the model's hidden size ("auto" bucket sizes)
  Choice<int64_t> steps;                      // --steps: the run's optimizer steps
  int64_t warmup = 0;                         // the trainer's warmup steps ("auto" warmup)
  std::vector<std::string> schedule_options;  // the trainer's schedule options given
};

/// What a trainer asks of the engine, and why.
struct JobSettings {
  EngineOptions engine;
  std::map<std::string, std::string> why;  // key -> "--lr" or "auto in ds.json: ..."
  bool engine_schedule = false;            // the file's scheduler drives the rate
  std::string schedule_note;               // the file's scheduler set aside: by which options
};

/// The file or the environment gives one of DeepSpeed's batch sizes (train_batch_size,
/// train_micro_batch_size_per_gpu, gradient_accumulation_steps), "auto" included.
bool file_sets_batch(const ConfigView &config);

/// Prints @p lines under a heading (rank 0's job), nothing when there are none.
void print_settings(const std::vector<std::string> &lines, const std::string &program);

/// Decides, for each setting, whether the trainer sets it (see the top of the file).
/// Throws std::invalid_argument for a dtype the trainers do not compute in.
JobSettings plan_job_settings(const ConfigView &config, const TrainerSettings &trainer);

/// Once the engine exists (@p resolved: zrt_engine_describe): one line per engine setting
/// that is not the trainer's default, none when neither the file nor the environment sets
/// one (the command line is then all there is): "zero_optimization.stage 3 (from s3.json)",
/// "optimizer.params.lr 0.003 (--lr)", "zero_optimization.stage 1 (ZRT_ZERO_STAGE, over
/// --zero-stage)".
std::vector<std::string> settings_lines(const nlohmann::json &resolved, const ConfigView &config,
                                        const JobSettings &job);

/// "WarmupLR (from ds.json): warmup 100 steps (log) from 0 to 0.003": the engine's
/// scheduler as the trainers' start-up line shows it; empty without one.
std::string engine_schedule_text(const nlohmann::json &resolved, const ConfigView &config);

/// What the engine resolved (@p resolved: zrt_engine_describe) into the trainer's options:
/// the micro batch (when the engine knows one), the accumulation, the optimizer and its
/// values, and the schedule: the engine's scheduler (lr.engine), or the trainer's own
/// with the engine's rate as its peak (the file's optimizer.params.lr, unless --lr).
void take_resolved(const nlohmann::json &resolved, const ConfigView &config, int &batch,
                   OptimizerConfig &optimizer, LrSchedule &lr);

}  // namespace training
