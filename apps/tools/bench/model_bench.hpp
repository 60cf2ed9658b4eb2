// The harness of the model benchmarks (zrt-bench gpt2, bert): zerort's context and Kokkos
// around a model's set-up, then rounds of one training step of each model being compared
// and one step of the gemm baseline (gemm_baseline.hpp), and the figures both print: step
// time, tokens/s, model FLOP/s, and model / gemm, the median of the rounds' ratios. A model
// supplies only its set-up, its step, its FLOP count and its baseline's shapes.
#pragma once

#include <zerort/zerort.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gemm_baseline.hpp"

/// One model being timed (GPT-2 compares two: its engine's buffers private or shared).
struct BenchRun {
  /// Its name in a comparison ("private"): the runs after the first say their tokens/s as a
  /// multiple of the first's ("tokens_per_s_vs_private"). Empty for a lone run.
  std::string name;
  std::string label;                               // a line printed above its figures; empty: none
  nlohmann::json json = nlohmann::json::object();  // its own fields of the JSON object
  std::function<void()> step;  // one training step: forward, backward, the engine's step
  /// After the rounds: more fields for the JSON object and more lines for the terminal.
  std::function<void(nlohmann::json &, std::vector<std::string> &)> report;
};

/// A model's benchmark, set up.
struct BenchModel {
  std::string title;                               // the first line
  nlohmann::json json = nlohmann::json::object();  // the model's fields of its JSON objects
  double tokens_per_step = 0;                      // over all ranks
  double model_flops = 0;                          // per step, over all ranks
  std::unique_ptr<GemmStep> gemms;                 // this rank's share of the step's products
  std::vector<BenchRun> runs;
};

/// The ranks of MPI_COMM_WORLD as a benchmark sees them.
struct BenchWorld {
  zrt_context_h context = nullptr;
  int rank = 0, size = 1;
};

/// Runs @p bench (named @p name in messages, "gpt2") in zerort's context over
/// MPI_COMM_WORLD with Kokkos started on the rank's device: @p set_up builds the model,
/// then `rounds` rounds after one untimed one, each a step of every run (taking turns at
/// going first) and one of the baseline, each timed as the slowest rank's. Rank 0 prints
/// the figures, or with @p json one JSON object per run. Errors are printed with the rank
/// and abort the job. Collective over MPI_COMM_WORLD.
void run_model_bench(const char *name, int rounds, bool json,
                     const std::function<BenchModel(const BenchWorld &)> &set_up);

/// This rank's share of @p global_batch sequences; throws std::invalid_argument when they
/// do not split over the ranks.
int per_rank_batch(int global_batch, int size);
