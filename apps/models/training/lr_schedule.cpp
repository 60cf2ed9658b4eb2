#include "lr_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace training {

void LrSchedule::validate() const {
  if (!(max_lr > 0) || !(min_lr >= 0) || min_lr > max_lr)
    throw std::invalid_argument(fmt::format(
        "learning rate schedule: need 0 <= min ({}) <= max ({}) and max > 0", min_lr, max_lr));
  if (warmup_steps < 0 || total_steps <= 0)
    throw std::invalid_argument(
        fmt::format("learning rate schedule: warmup ({}) must be >= 0 and total steps ({}) > 0",
                    warmup_steps, total_steps));
  if (decay == LrDecay::polynomial && !(power > 0))
    throw std::invalid_argument(fmt::format(
        "learning rate schedule: the polynomial decay's power ({}) must be > 0", power));
}

double LrSchedule::at(int64_t step) const {
  if (step < warmup_steps)
    return max_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  const int64_t decay_steps = total_steps - warmup_steps;
  if (decay_steps <= 1) return max_lr;
  // From max at the first step after warmup to min at the last step.
  const double progress = std::min(
      1.0, static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps - 1));
  const double factor = decay == LrDecay::polynomial
                            ? std::pow(1.0 - progress, power)
                            : 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  return min_lr + factor * (max_lr - min_lr);
}

}  // namespace training
