// The command-line options both trainer programs take for what their loop does
// (training_loop.hpp's RunOptions): steps, micro-steps, the optimizer's constants, seed,
// evaluation, metrics, plots, checkpoints, --resume and --init-from. Each program adds its
// model's own (and its defaults, set in RunOptions before add_to).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "config_view.hpp"
#include "training_loop.hpp"

namespace training {

/// What the options hold until the run's options take it (apply).
struct RunCli {
  std::string save, resume, init_from;
  std::optional<int64_t> global_batch;

  /// Adds the options to @p app, bound to @p t; @p short_name names the plots' files
  /// ("gpt2": gpt2_loss.png, gpt2_memory.png).
  void add_to(CLI::App &app, RunOptions &t, const std::string &short_name);
  /// --global-batch split by the command line's own numbers (@p batch per rank on @p ranks),
  /// checked in its words, unless the configuration file sets the batch sizes (then they
  /// are the engine's to check). Throws std::invalid_argument.
  void check_global_batch(const ConfigView &config, int batch, int ranks) const;
  /// The checkpoint and weights paths into @p t.
  void apply(RunOptions &t) const;
};

}  // namespace training
