// zrt-bert's trainer: BERT's pretraining examples (text/pretraining_examples.hpp), forward
// and backward with the MLM and NSP losses and MLM accuracy, evaluation on held-out
// examples, run by the trainers' loop (training/training_loop.hpp: the schedule, steps
// through a ModelState, LAMB by default, progress, metrics, plots, checkpoints, a clean stop
// on SIGUSR1/SIGTERM).
//
// The losses are those of the global batch, whatever the world size: the MLM loss is the
// mean over all masked positions of all ranks and micro-steps (their number is summed
// across ranks before backward), the NSP loss the mean over all sequences. Which examples
// a step reads depends only on the step and the global batch, so a run at np 2 and one at
// np 1 with twice the micro-steps see the same data, and a run resumed at another world
// size continues with the examples the saved one would have read.
#pragma once

#include <zerort/zerort.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/bert_config.hpp"
#include "training/lr_schedule.hpp"
#include "training/metrics.hpp"
#include "training/model_state.hpp"
#include "training/plot.hpp"
#include "training/training_loop.hpp"
#include "training/world.hpp"

namespace bert {

/// This process's place in the job (training/world.hpp).
using World = training::World;

/// What a run of zrt-bert does: the loop's options (training/training_loop.hpp: steps,
/// schedule, optimizer, evaluation, metrics, checkpoints) and BERT's own.
struct BertTrainOptions : training::RunOptions {
  BertConfig config;
  std::filesystem::path vocab_path;  // the vocabulary data_dir's files were made with
  int batch = 8;                     // sequences per micro-step and rank
  int seq = 128;                     // tokens per sequence, [CLS] and [SEP]s included
  uint64_t data_seed = 12345;        // pairs, their order and the masks
  double mask_prob = 0.15;
  int max_predictions = -1;  // masked positions per sequence at most; -1: round(0.15 seq)
  int eval_batches = 4;
};

/// One step's (or one evaluation's) figures, over the global batch.
struct BertStepLosses {
  double loss = 0, mlm = 0, nsp = 0, mlm_accuracy = 0, nsp_accuracy = 0;
};

struct BertTrainResult {
  std::vector<BertStepLosses> steps;  // each step of this run
  std::vector<BertStepLosses> evals;  // each evaluation
  int64_t first_step = 0;             // steps already done when the run began (resumed)
  int64_t steps_done = 0;
  bool stopped = false;  // ended early by SIGUSR1/SIGTERM (on any rank)
  int stop_signal = 0;
  training::StateMemory memory;
  int64_t stage0_bytes = 0;
  int64_t activation_bytes = 0;
  std::filesystem::path checkpoint;  // the last one written
  training::PlotFiles plots;
};

class BertTrainer {
 public:
  /// Opens and checks the vocabulary, the data and the checkpoint to resume from, builds
  /// the model over @p state's store and allocates activations. Throws on bad input, before
  /// anything collective. Local.
  BertTrainer(const BertTrainOptions &options, training::ModelState &state, const World &world);
  ~BertTrainer();
  /// Initializes the parameters (or loads the checkpoint) and trains. Collective.
  BertTrainResult run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bert
