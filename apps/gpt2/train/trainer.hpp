// The training loop: data, forward, backward, optimizer step through a ModelState, the
// learning-rate schedule, evaluation, samples, progress, metrics and plots, and a clean
// stop on SIGUSR1/SIGTERM.
#pragma once

#include <zerort/zerort.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/token_file.hpp"
#include "model/config.hpp"
#include "train/sampler.hpp"
#include "train/training_types.hpp"

namespace gpt2 {

/// This process's place in the job; comm is null for a lone process. context is the
/// zerort context whose pinned host memory takes offloaded activations (needed only with
/// TrainOptions::offload_activations).
struct World {
  int rank = 0, size = 1;
  zrt_comm_h comm = nullptr;
  zrt_context_h context = nullptr;
};

struct TrainOptions {
  Gpt2Config config;
  std::filesystem::path data_dir;  // train.bin (and val.bin for evaluation)
  TokenFormat data_format = TokenFormat::automatic;
  std::filesystem::path tokenizer_dir;  // to print samples as text; empty: token ids
  int batch = 4;                        // sequences per micro-step and rank
  int seq = 64;                         // tokens per sequence
  int64_t steps = 100;                  // optimizer steps
  LrSchedule lr;                        // total_steps is taken from steps
  OptimizerConfig optimizer;
  bool recompute = false;
  // Blocks' activations to host memory between forward and backward (model/block_offload.hpp);
  // not with recompute, which keeps none of them.
  bool offload_activations = false;
  uint64_t seed = 1337;
  int64_t eval_every = 50;  // and at the end; 0 = only at the end
  int eval_batches = 8;
  int64_t sample_every = 0;  // 0 = only at the end; < 0 = never
  SampleOptions sample;
  std::filesystem::path json_metrics;
  bool plot = false;
  std::filesystem::path plot_dir = ".";
  int64_t log_every = 1;
  // Consecutive updates skipped for a non-finite gradient (the engine's check, agreed
  // across ranks) after which the run stops as diverged (TrainingDiverged); 0: never.
  int64_t max_skipped_steps = 10;
  bool quiet = false;  // no progress lines (tests)
  // Checkpoints (zerort's HDF5, train/checkpoint_info.hpp): written at the end, every
  // save_every steps, and when a stop signal arrives; "{step}" in the path becomes the step.
  std::filesystem::path save_path;
  int64_t save_every = 0;             // 0: only at the end (or on a signal)
  bool save_async = false;            // --save-every saves write in the background
  std::filesystem::path resume_path;  // continue from this checkpoint
  std::filesystem::path init_from;    // weights only, fresh optimizer state (--init-from)
  std::filesystem::path dump_logits;  // write one batch's logits and stop (--dump-logits)
};

struct TrainResult {
  std::vector<double> losses;  // mean training loss of each step, over the ranks
  std::vector<EvalMetrics> evals;
  int64_t steps_done = 0;
  bool stopped = false;  // ended early by SIGUSR1/SIGTERM (on any rank)
  int stop_signal = 0;   // the signal this rank received, or 0
  std::string last_sample;
  PlotFiles plots;
  StateMemory memory;                      // this rank's model states at the end
  int64_t stage0_bytes = 0;                // what stage 0 would hold instead
  int64_t activation_bytes = 0;            // training activations resident on this rank
  int64_t offloaded_activation_bytes = 0;  // the most of them held in host memory at once
  int64_t first_step = 0;                  // steps already done when the run began (a resumed run)
  std::filesystem::path checkpoint;        // the last one written, if any
};

class Trainer {
 public:
  /// Opens and checks the data, the tokenizer and the checkpoint to resume from (its model
  /// must be @p options.config), builds the model over @p state's store, and allocates
  /// activations. Throws on bad input, before anything collective, so the
  /// caller can agree on success across ranks. Local.
  Trainer(const TrainOptions &options, ModelState &state, const World &world);
  ~Trainer();
  /// Initializes the parameters (or loads the checkpoint) and trains. Collective over the
  /// world.
  TrainResult run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Trainer(options, state, world).run()
TrainResult train(const TrainOptions &options, ModelState &state, const World &world);

}  // namespace gpt2
