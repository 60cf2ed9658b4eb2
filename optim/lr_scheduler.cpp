#include "optim/lr_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "runtime/error.hpp"

namespace zrt {

const char *lr_scheduler_name(LrSchedulerType type) {
  switch (type) {
    case LrSchedulerType::None:
      return "none";
    case LrSchedulerType::WarmupLR:
      return "WarmupLR";
    case LrSchedulerType::WarmupDecayLR:
      return "WarmupDecayLR";
    case LrSchedulerType::WarmupCosineLR:
      return "WarmupCosineLR";
  }
  return "?";
}

void LrSchedulerSettings::validate() const {
  if (type == LrSchedulerType::None) return;
  const char *name = lr_scheduler_name(type);
  auto check = [&](bool ok, const char *key, double value, const char *accepted) {
    if (!ok)
      fail(ZRT_ERR_CONFIG, "bad value {} for scheduler.params.{} ({} from {}): {}", value, key,
           name, origin, accepted);
  };
  if (type == LrSchedulerType::WarmupCosineLR) {
    check(warmup_min_ratio >= 0 && warmup_min_ratio <= 1, "warmup_min_ratio", warmup_min_ratio,
          "accepted values are 0 to 1");
    check(cos_min_ratio >= 0 && cos_min_ratio <= 1, "cos_min_ratio", cos_min_ratio,
          "accepted values are 0 to 1");
  } else {
    check(warmup_min_lr >= 0, "warmup_min_lr", warmup_min_lr, "accepted values are rates >= 0");
    check(warmup_max_lr >= 0, "warmup_max_lr", warmup_max_lr, "accepted values are rates >= 0");
  }
  if (type != LrSchedulerType::WarmupLR && total_num_steps <= 0)
    fail(ZRT_ERR_CONFIG,
         "{} (scheduler.type from {}) needs scheduler.params.total_num_steps, the optimizer "
         "steps of the whole run",
         name, origin);
}

double LrScheduler::warmup_factor(int64_t it) const {
  const int64_t w = std::max<int64_t>(2, s_.warmup_num_steps);
  if (s_.log_warmup)
    return std::log(static_cast<double>(it + 1)) * (1.0 / std::log(static_cast<double>(w)));
  return static_cast<double>(it) / static_cast<double>(w);
}

double LrScheduler::lr(int64_t applied) const {
  // DeepSpeed's last_batch_iteration when this update runs.
  const int64_t it = applied - 1;
  const int64_t w = std::max<int64_t>(2, s_.warmup_num_steps);
  const double total = static_cast<double>(s_.total_num_steps);
  switch (s_.type) {
    case LrSchedulerType::None:
      break;
    case LrSchedulerType::WarmupLR:
    case LrSchedulerType::WarmupDecayLR: {
      if (it < 0) return s_.warmup_min_lr;
      double gamma = 1.0;
      if (it < w)
        gamma = warmup_factor(it);
      else if (s_.type == LrSchedulerType::WarmupDecayLR)
        gamma = std::max(
            0.0, (total - static_cast<double>(it)) / std::max(1.0, total - static_cast<double>(w)));
      return s_.warmup_min_lr + (s_.warmup_max_lr - s_.warmup_min_lr) * gamma;
    }
    case LrSchedulerType::WarmupCosineLR: {
      if (it < 0) return 0.0;
      double ratio;
      if (it < w) {
        ratio = s_.warmup_min_ratio + warmup_factor(it) * (1.0 - s_.warmup_min_ratio);
      } else {
        const double real_last = static_cast<double>(it - w + 1);
        const double real_total = std::max(1.0, total - static_cast<double>(w));
        const double progress = std::min(1.0, real_last / real_total);
        const double cosine = (1 + std::cos(std::numbers::pi * progress)) / 2;
        ratio = std::max(0.0, s_.cos_min_ratio + (1.0 - s_.cos_min_ratio) * cosine);
      }
      return s_.base_lr * ratio;
    }
  }
  fail(ZRT_ERR_INTERNAL, "lr scheduler asked for a rate without a schedule");
}

}  // namespace zrt
