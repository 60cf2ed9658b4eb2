// The learning rate as a function of the optimizer step: linear warmup, then a decay to a
// floor, either cosine (GPT-3's and nanoGPT's schedule, zrt-gpt2's) or polynomial (BERT's:
// Google's polynomial_decay, power 1 by default, which is linear, to 0). The engine applies
// the optimizer; the trainer hands it this rate every step (zrt_engine_set_lr), unless the
// configuration file's scheduler block drives the engine's rate itself (engine below).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace training {

enum class LrDecay { cosine, polynomial };

struct LrSchedule {
  double max_lr = 6e-4;
  double min_lr = 6e-5;       // reached at the last step
  int64_t warmup_steps = 10;  // linear from max_lr/warmup to max_lr
  int64_t total_steps = 1;
  LrDecay decay = LrDecay::cosine;
  double power = 1.0;  // polynomial: (1 - progress)^power
  // Non-empty: the engine's scheduler sets the rate (scheduler.type in the configuration
  // file), as this text describes; the trainer then hands it none.
  std::string engine;

  /// The rate to hand the engine for optimizer step @p step: at(step), or none when the
  /// engine's scheduler sets it.
  std::optional<double> rate(int64_t step) const {
    if (!engine.empty()) return std::nullopt;
    return at(step);
  }

  /// The rate for optimizer step @p step (0-based). Throws std::invalid_argument if the
  /// schedule itself is inconsistent (negative rates, min above max, ...).
  double at(int64_t step) const;
  void validate() const;
};

}  // namespace training
