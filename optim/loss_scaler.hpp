// Loss scaling for fp16, with DeepSpeed's knobs and semantics (DynamicLossScaler):
// an overflow halves the scale once `hysteresis` overflows have been seen (never below
// min_scale); `window` steps without overflow double it, which refills the hysteresis
// (with consecutive_hysteresis every step without overflow does). A static scale never
// changes.
#pragma once

#include <cstdint>

namespace zrt {

class LossScaler {
 public:
  struct Settings {
    bool dynamic = false;
    double static_scale = 1;
    int initial_scale_power = 16;
    int64_t window = 1000;
    int hysteresis = 2;
    double min_scale = 1;
    bool consecutive_hysteresis = false;  // every clean step refills the hysteresis
  };

  LossScaler() = default;
  explicit LossScaler(const Settings &s);

  double scale() const { return scale_; }
  bool dynamic() const { return settings_.dynamic; }
  // Called once per optimizer step (applied or skipped).
  void update(bool overflow);

  // State, for checkpoints.
  struct State {
    double scale;
    int hysteresis_left;
    int64_t iteration, last_overflow;
  };
  State state() const { return {scale_, hysteresis_left_, iteration_, last_overflow_}; }
  void restore(const State &s);

 private:
  Settings settings_;
  double scale_ = 1;
  int hysteresis_left_ = 1;
  int64_t iteration_ = 0, last_overflow_ = -1;
};

}  // namespace zrt
