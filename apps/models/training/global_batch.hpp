// --global-batch: the sequences of one optimizer step over all ranks (DeepSpeed's
// train_batch_size), which is what a user keeps fixed when the job's size changes. It is
// split into sequences per rank (--batch) x ranks x micro-steps (--grad-accum); a job with
// more ranks than that split allows is refused before it trains, with the numbers.
#pragma once

#include "training/cli_checks.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>

namespace training {

/// The micro-steps per optimizer step that give @p global sequences with @p batch per
/// micro-step and rank on @p ranks ranks. Throws std::invalid_argument saying why when
/// @p global is not a multiple of batch x ranks.
inline int accumulation_for_global_batch(int64_t global, int batch, int ranks) {
  const int64_t per_micro_step = static_cast<int64_t>(batch) * ranks;
  if (global < per_micro_step)
    throw std::invalid_argument(fmt::format(
        "--global-batch {} is smaller than one micro-step of {} rank(s) x --batch {} = {} "
        "sequences: use fewer ranks or a smaller --batch",
        global, ranks, batch, per_micro_step));
  if (global % per_micro_step != 0)
    throw std::invalid_argument(fmt::format(
        "--global-batch {} does not split into {} rank(s) x --batch {} = {} sequences per "
        "micro-step (it is not a multiple of {})",
        global, ranks, batch, per_micro_step, per_micro_step));
  return static_cast<int>(global / per_micro_step);
}

/// Adds --global-batch, which excludes --grad-accum (@p grad_accum): one of them sets the
/// micro-steps.
inline void add_global_batch_option(CLI::App &app, std::optional<int64_t> &global,
                                    CLI::Option *grad_accum) {
  app.add_option("--global-batch", global,
                 "sequences per optimizer step over all ranks; sets --grad-accum to "
                 "global / (--batch x ranks), which must divide")
      ->check(kPositive)
      ->excludes(grad_accum);
}

}  // namespace training
