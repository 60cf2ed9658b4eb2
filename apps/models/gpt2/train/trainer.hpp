// zrt-gpt2's trainer: GPT-2's data, forward and backward, evaluation and text samples, run
// by the trainers' loop (training/training_loop.hpp: the schedule, steps through a
// ModelState, progress, metrics, plots, checkpoints, a clean stop on SIGUSR1/SIGTERM).
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
#include "training/training_loop.hpp"
#include "training/world.hpp"

namespace gpt2 {

/// This process's place in the job (training/world.hpp).
using World = training::World;

/// What a run of zrt-gpt2 does: the loop's options (training/training_loop.hpp: steps,
/// schedule, optimizer, evaluation, metrics, checkpoints) and GPT-2's own.
struct TrainOptions : training::RunOptions {
  Gpt2Config config;
  TokenFormat data_format = TokenFormat::automatic;  // of data_dir's train.bin and val.bin
  std::filesystem::path tokenizer_dir;               // to print samples as text; empty: token ids
  int batch = 4;                                     // sequences per micro-step and rank
  int seq = 64;                                      // tokens per sequence
  bool recompute = false;
  // Blocks' activations to host memory between forward and backward (model/block_offload.hpp);
  // not with recompute, which keeps none of them.
  bool offload_activations = false;
  int eval_batches = 8;
  int64_t sample_every = 0;  // 0 = only at the end; < 0 = never
  SampleOptions sample;
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
