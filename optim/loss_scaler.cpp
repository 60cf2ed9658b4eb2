#include "optim/loss_scaler.hpp"

#include <algorithm>
#include <cmath>

namespace zrt {

LossScaler::LossScaler(const Settings &s) : settings_(s) {
  scale_ = s.dynamic ? std::ldexp(1.0, s.initial_scale_power) : s.static_scale;
  hysteresis_left_ = s.hysteresis;
}

void LossScaler::update(bool overflow) {
  if (!settings_.dynamic) return;
  if (overflow) {
    if (settings_.hysteresis == 1 || hysteresis_left_ == 1)
      scale_ = std::max(scale_ / 2, settings_.min_scale);
    else
      --hysteresis_left_;
    last_overflow_ = iteration_;
  } else {
    // As DeepSpeed: with consecutive_hysteresis a clean step refills the allowance, without
    // it only the scale's growth does.
    if (settings_.consecutive_hysteresis) hysteresis_left_ = settings_.hysteresis;
    if ((iteration_ - last_overflow_) % settings_.window == 0) {
      hysteresis_left_ = settings_.hysteresis;
      scale_ *= 2;
    }
  }
  ++iteration_;
}

void LossScaler::restore(const State &s) {
  scale_ = s.scale;
  hysteresis_left_ = s.hysteresis_left;
  iteration_ = s.iteration;
  last_overflow_ = s.last_overflow;
}

}  // namespace zrt
