// What the trainer reports: one progress line per step on the terminal, and the same
// facts as JSON lines (--json-metrics), one object per line with a "type":
//   {"type":"run", ...}    the configuration, once
//   {"type":"step", "step", "loss", "lr", "grad_norm", "ms", "tokens_per_s",
//    "mem_model_states", "mem_activations", "mem_activations_offloaded",
//    "mem_activations_sampling", "mem_rss", "mem_peak_rss",  (bytes, per rank)
//    "comm_wait_ms", "comm_reduce_scatter_bytes", "comm_all_gather_bytes",
//    "comm_all_reduce_bytes"}  (the engine's collectives in the step, this rank's wait)
//    with ZeRO-Offload also "offload_copy_ms", "offload_copy_exposed_ms",
//    "offload_cpu_ms", "offload_cpu_exposed_ms" (the copies and the CPU's update, and
//    what of each the step waited for)
//   {"type":"eval", "step", "val_loss"}
//   {"type":"sample", "step", "text"}
//   {"type":"end", "steps", "reason", ...}
// Memory figures are this rank's (rank 0's in the files), model states by the ZeRO
// accounting of the store that holds them. A resumed run continues the file (a requeued
// job keeps one file for all its runs): its records up to the checkpoint's step stay, those
// of steps after it (trained again now) go, and each run adds its "run" and "end" records.
#pragma once

#include <zerort/zerort.h>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model_state.hpp"

namespace training {

struct StepMetrics {
  int64_t step = 0;  // 1-based: optimizer steps done
  double loss = 0, lr = 0, grad_norm = 0, seconds = 0, tokens_per_s = 0;
  int64_t mem_model_states = 0, mem_activations = 0, mem_rss = 0, mem_peak_rss = 0;
  // Peak bytes of activations in host memory (--offload-activations), beside the resident
  // mem_activations.
  int64_t mem_activations_offloaded = 0;
  // Buffers of the text sampler (one sequence, inference only), allocated at the first
  // sample and kept: resident beside the training activations, not part of them.
  int64_t mem_activations_sampling = 0;
  // The engine's collectives over the step's micro-steps: the exposed communication
  // (wait_seconds of seconds) and the bytes of each kind.
  CommFigures comm;
  // The model's own figures (BERT: mlm_loss, nsp_loss, mlm_accuracy): added to the JSON
  // line as they are, and @p loss_detail to the progress line after the loss.
  nlohmann::json extra = nlohmann::json::object();
  std::string loss_detail;
};

struct EvalMetrics {
  int64_t step = 0;
  double val_loss = 0;
  nlohmann::json extra = nlohmann::json::object();  // the model's own figures, as in steps
};

/// Resident and peak resident bytes of this process (Linux /proc/self/status), 0 if
/// unknown.
int64_t resident_bytes();
int64_t peak_resident_bytes();

/// "1.5 GiB", "312 MiB", "12 KiB": zerort's own wording (zrt_format_bytes)
std::string format_bytes(int64_t bytes);
/// The model states' lines both trainers print:
///   breakdown: "133 MiB (parameters 26.6 MiB, gradients 26.6 MiB, master weights 0 B,
///               AdamW 53.1 MiB, buckets 26.6 MiB); stage 0 would hold 106 MiB"
///   summary:   "133 MiB (106 MiB + 26.6 MiB of reduction buckets; stage 0 would hold 106 MiB)"
/// @p optimizer_label names the optimizer state (optimizer_label()).
std::string state_memory_breakdown(const StateMemory &m, int64_t stage0_bytes,
                                   const std::string &optimizer_label);
std::string state_memory_summary(const StateMemory &m, int64_t stage0_bytes);
/// "AdamW", "Adam", "LAMB", "SGD": the optimizer as the trainers' lines name its state.
std::string optimizer_label(zrt_optimizer_t kind);

/// "1:02:03", "4:05"
std::string format_duration(double seconds);

class MetricsLog {
 public:
  /// @p path empty: no file. Throws std::runtime_error if the file cannot be created. The
  /// file is replaced at the first record, unless resumed_at() came first.
  explicit MetricsLog(const std::filesystem::path &path);

  /// The run continues from a checkpoint at @p step: the file keeps the records of earlier
  /// runs up to that step, and steps() and evals() start with them (the plots then show the
  /// whole job). Records the file cannot be read as are left out, saying how many.
  void resumed_at(int64_t step);

  void run(const nlohmann::json &info);
  void step(const StepMetrics &m);
  void eval(const EvalMetrics &m);
  void sample(int64_t step, const std::string &text);
  void end(const nlohmann::json &info);

  const std::vector<StepMetrics> &steps() const { return steps_; }
  const std::vector<EvalMetrics> &evals() const { return evals_; }

 private:
  void write(const nlohmann::json &line);

  std::filesystem::path path_;
  bool opened_ = false;
  std::ofstream out_;
  std::vector<StepMetrics> steps_;
  std::vector<EvalMetrics> evals_;
};

/// The progress line: step, loss, lr, gradient norm, time, tokens/s, ETA, memory.
std::string progress_line(const StepMetrics &m, int64_t total_steps, double eta_seconds);

}  // namespace training
