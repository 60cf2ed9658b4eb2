// zerort's learning rate schedulers against DeepSpeed's: the rate of every update, as
// DeepSpeed's own lr_schedules.py gives it when its engine drives it (the constants are
// lr_scheduler_reference.py's output, which runs DeepSpeed's file; see there).
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "optim/lr_scheduler.hpp"
#include "runtime/error.hpp"

using namespace zrt;

namespace {

// WarmupLR, {'warmup_min_lr': 0.0001, 'warmup_max_lr': 0.003, 'warmup_num_steps': 5}
constexpr double kWarmupLog[] = {
    0.0001, 0.0001, 0.00134896201841284, 0.0020795579640093577, 0.00259792403682568, 0.003, 0.003,
    0.003,  0.003};
// WarmupLR, {'warmup_min_lr': 0.0, 'warmup_max_lr': 0.001, 'warmup_num_steps': 4,
// 'warmup_type': 'linear'}
constexpr double kWarmupLinear[] = {0.0, 0.0, 0.00025, 0.0005, 0.00075, 0.001, 0.001};
// WarmupLR, optimizer lr 0.0005, {'warmup_num_steps': 3}: warmup_max_lr unset is the
// optimizer's rate.
constexpr double kWarmupMaxFromOptimizer[] = {0.0, 0.0, 0.00031546487678572866, 0.0005, 0.0005};
// WarmupDecayLR, {'total_num_steps': 10, 'warmup_min_lr': 1e-05, 'warmup_max_lr': 0.001,
// 'warmup_num_steps': 3}: past the end it stays at warmup_min_lr.
constexpr double kDecayLog[] = {1e-05,
                                1e-05,
                                0.0006346204560357427,
                                0.001,
                                0.001,
                                0.0008585714285714286,
                                0.0007171428571428572,
                                0.0005757142857142857,
                                0.0004342857142857143,
                                0.0002928571428571429,
                                0.00015142857142857143,
                                1e-05,
                                1e-05};
// WarmupDecayLR, {'total_num_steps': 8, 'warmup_min_lr': 0.0, 'warmup_max_lr': 0.002,
// 'warmup_num_steps': 1, 'warmup_type': 'linear'}: DeepSpeed warms up over at least 2 steps.
constexpr double kDecayLinearShortWarmup[] = {0.0,
                                              0.0,
                                              0.001,
                                              0.002,
                                              0.0016666666666666668,
                                              0.0013333333333333333,
                                              0.001,
                                              0.0006666666666666666,
                                              0.0003333333333333333,
                                              0.0};
// WarmupCosineLR, optimizer lr 0.002, {'total_num_steps': 12, 'warmup_min_ratio': 0.1,
// 'warmup_num_steps': 4, 'cos_min_ratio': 0.05, 'warmup_type': 'linear'}
constexpr double kCosineLinear[] = {0.0,
                                    0.0002,
                                    0.0006500000000000001,
                                    0.0011,
                                    0.0015500000000000002,
                                    0.0019276855558857224,
                                    0.0017217514421272201,
                                    0.0014135492607468354,
                                    0.0010500000000000002,
                                    0.0006864507392531647,
                                    0.0003782485578727799,
                                    0.0001723144441142776,
                                    0.0001,
                                    0.0001,
                                    0.0001};
// WarmupCosineLR, optimizer lr 0.001, {'total_num_steps': 8, 'warmup_num_steps': 3}
// (log warmup, cos_min_ratio 1e-4: DeepSpeed's defaults)
constexpr double kCosineLog[] = {0.0,
                                 0.0,
                                 0.0006309297535714573,
                                 0.001,
                                 0.000904518046337755,
                                 0.000654543046337755,
                                 0.0003455569536622451,
                                 9.558195366224507e-05,
                                 1.0000000000000001e-07,
                                 1.0000000000000001e-07,
                                 1.0000000000000001e-07};

template <size_t N>
void expect_rates(const LrSchedulerSettings &s, const double (&expected)[N]) {
  s.validate();
  LrScheduler scheduler(s);
  for (size_t n = 0; n < N; ++n)
    EXPECT_DOUBLE_EQ(scheduler.lr(static_cast<int64_t>(n)), expected[n]) << "update " << n;
}

LrSchedulerSettings lr_warmup(LrSchedulerType type, double min_lr, double max_lr, int64_t steps,
                              bool log) {
  LrSchedulerSettings s;
  s.type = type;
  s.warmup_min_lr = min_lr;
  s.warmup_max_lr = max_lr;
  s.warmup_num_steps = steps;
  s.log_warmup = log;
  s.origin = "test";
  return s;
}

}  // namespace

TEST(LrScheduler, WarmupLRFollowsDeepSpeedLogAndLinear) {
  expect_rates(lr_warmup(LrSchedulerType::WarmupLR, 1e-4, 3e-3, 5, true), kWarmupLog);
  expect_rates(lr_warmup(LrSchedulerType::WarmupLR, 0, 1e-3, 4, false), kWarmupLinear);
  // The engine passes the optimizer's rate as warmup_max_lr when the file has none.
  expect_rates(lr_warmup(LrSchedulerType::WarmupLR, 0, 5e-4, 3, true), kWarmupMaxFromOptimizer);
}

TEST(LrScheduler, WarmupDecayLRFollowsDeepSpeedToItsEndAndPast) {
  LrSchedulerSettings s = lr_warmup(LrSchedulerType::WarmupDecayLR, 1e-5, 1e-3, 3, true);
  s.total_num_steps = 10;
  expect_rates(s, kDecayLog);
  s = lr_warmup(LrSchedulerType::WarmupDecayLR, 0, 2e-3, 1, false);
  s.total_num_steps = 8;
  expect_rates(s, kDecayLinearShortWarmup);
}

TEST(LrScheduler, WarmupCosineLRFollowsDeepSpeedFromTheOptimizersRate) {
  LrSchedulerSettings s;
  s.type = LrSchedulerType::WarmupCosineLR;
  s.base_lr = 2e-3;
  s.total_num_steps = 12;
  s.warmup_min_ratio = 0.1;
  s.warmup_num_steps = 4;
  s.cos_min_ratio = 0.05;
  s.log_warmup = false;
  expect_rates(s, kCosineLinear);
  LrSchedulerSettings d;  // DeepSpeed's defaults: log warmup, cos_min_ratio 1e-4
  d.type = LrSchedulerType::WarmupCosineLR;
  d.base_lr = 1e-3;
  d.total_num_steps = 8;
  d.warmup_num_steps = 3;
  expect_rates(d, kCosineLog);
}

TEST(LrScheduler, ADecayWithoutItsLengthIsRefusedNamingTheKey) {
  for (LrSchedulerType type : {LrSchedulerType::WarmupDecayLR, LrSchedulerType::WarmupCosineLR}) {
    LrSchedulerSettings s;
    s.type = type;
    s.origin = "ds.json";
    try {
      s.validate();
      ADD_FAILURE() << lr_scheduler_name(type) << " without total_num_steps was accepted";
    } catch (const Error &e) {
      EXPECT_EQ(e.status(), ZRT_ERR_CONFIG);
      const std::string m = e.what();
      EXPECT_NE(m.find("scheduler.params.total_num_steps"), std::string::npos) << m;
      EXPECT_NE(m.find(lr_scheduler_name(type)), std::string::npos) << m;
      EXPECT_NE(m.find("ds.json"), std::string::npos) << m;
    }
  }
  LrSchedulerSettings bad = lr_warmup(LrSchedulerType::WarmupLR, -1, 1e-3, 10, true);
  try {
    bad.validate();
    ADD_FAILURE() << "a negative warmup_min_lr was accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("scheduler.params.warmup_min_lr"), std::string::npos)
        << e.what();
  }
}
