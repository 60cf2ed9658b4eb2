// A run that diverged: after max_skipped updates in a row skipped for a NaN or Inf gradient
// (the engine's check, agreed across ranks, so every rank throws at the same step), the
// trainers stop instead of training on.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <stdexcept>

#include "model_state.hpp"

namespace training {

/// Thrown by a trainer's run on every rank at the same step; nothing is saved after it.
class TrainingDiverged : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Counts skipped updates in a row.
class DivergenceWatch {
 public:
  /// @p max_skipped 0: never stop.
  explicit DivergenceWatch(int64_t max_skipped) : max_skipped_(max_skipped) {}
  /// After optimizer step @p step (1-based) with mean loss @p loss: throws TrainingDiverged
  /// naming the last good step once max_skipped updates in a row were skipped.
  void after_step(const StepReport &report, int64_t step, double loss) {
    in_a_row_ = report.skipped ? in_a_row_ + 1 : 0;
    if (max_skipped_ > 0 && in_a_row_ >= max_skipped_)
      throw TrainingDiverged(fmt::format(
          "training diverged: {} steps in a row (to step {}) had a NaN or Inf gradient and "
          "were skipped (loss {:.4g}); the parameters are those of step {}. Lower --lr, or "
          "resume from an earlier checkpoint (--max-skipped-steps 0 goes on regardless)",
          in_a_row_, step, loss, step - in_a_row_));
  }

 private:
  int64_t max_skipped_;
  int64_t in_a_row_ = 0;
};

}  // namespace training
