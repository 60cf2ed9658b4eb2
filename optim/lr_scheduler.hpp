// DeepSpeed's learning rate schedulers (deepspeed/runtime/lr_schedules.py: WarmupLR,
// WarmupDecayLR, WarmupCosineLR), the `scheduler` block of a ds_config.json, with
// DeepSpeed's formulas and its order of events.
//
// DeepSpeed sets the rate from the scheduler when the scheduler is made (its
// last_batch_iteration -1) and steps the scheduler after each applied optimizer step
// (an fp16 overflow skips both), so the update that follows `applied` applied updates
// runs with the scheduler at last_batch_iteration = applied - 1:
//   - at -1, WarmupLR and WarmupDecayLR give warmup_min_lr and WarmupCosineLR gives 0;
//   - during warmup (it < W, W = max(2, warmup_num_steps)) the factor is
//     log(it + 1) / log(W) (log) or it / W (linear);
//   - WarmupLR then stays at warmup_max_lr; WarmupDecayLR falls linearly,
//     max(0, (T - it) / max(1, T - W)); WarmupCosineLR follows
//     cos_min_ratio + (1 - cos_min_ratio) (1 + cos(pi min(1, (it - W + 1) / max(1, T - W)))) / 2
//     of the base rate, after a warmup from warmup_min_ratio of it.
// The engine's step count is the count of applied updates, which checkpoints keep, so a
// loaded checkpoint resumes the schedule where it was.
#pragma once

#include <cstdint>
#include <string>

namespace zrt {

enum class LrSchedulerType { None, WarmupLR, WarmupDecayLR, WarmupCosineLR };

// "WarmupLR", ...; "none".
const char *lr_scheduler_name(LrSchedulerType type);

struct LrSchedulerSettings {
  LrSchedulerType type = LrSchedulerType::None;
  double warmup_min_lr = 0;      // WarmupLR, WarmupDecayLR
  double warmup_max_lr = 0.001;  // WarmupLR, WarmupDecayLR
  int64_t warmup_num_steps = 1000;
  bool log_warmup = true;       // warmup_type log; false: linear
  int64_t total_num_steps = 0;  // WarmupDecayLR, WarmupCosineLR
  double warmup_min_ratio = 0;  // WarmupCosineLR
  double cos_min_ratio = 1e-4;  // WarmupCosineLR
  double base_lr = 0.001;       // WarmupCosineLR: optimizer.params.lr
  std::string origin;           // where scheduler.type was set, for messages

  // Throws Error(ZRT_ERR_CONFIG) naming the key when the values cannot make a schedule
  // (a decay without total_num_steps, negative rates). Local.
  void validate() const;
};

class LrScheduler {
 public:
  explicit LrScheduler(const LrSchedulerSettings &settings) : s_(settings) {}

  // The rate of the update that follows `applied` applied updates. Pure.
  double lr(int64_t applied) const;
  const LrSchedulerSettings &settings() const { return s_; }

 private:
  // The warmup's factor in [0, 1) at iteration it (0 <= it < W).
  double warmup_factor(int64_t it) const;

  LrSchedulerSettings s_;
};

}  // namespace zrt
