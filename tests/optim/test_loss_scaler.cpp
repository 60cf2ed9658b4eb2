#include <gtest/gtest.h>

#include "optim/loss_scaler.hpp"

using namespace zrt;

TEST(LossScaler, StaticNeverChanges) {
  LossScaler::Settings s;
  s.static_scale = 128;
  LossScaler l(s);
  l.update(true);
  l.update(false);
  EXPECT_EQ(l.scale(), 128);
}

TEST(LossScaler, HysteresisThenHalvingThenGrowthAfterTheWindow) {
  LossScaler::Settings s;
  s.dynamic = true;
  s.initial_scale_power = 10;
  s.hysteresis = 2;
  s.window = 4;
  s.min_scale = 256;
  LossScaler l(s);
  EXPECT_EQ(l.scale(), 1024);
  l.update(true);  // first overflow: hysteresis absorbs it
  EXPECT_EQ(l.scale(), 1024);
  l.update(true);  // second: halve
  EXPECT_EQ(l.scale(), 512);
  l.update(true);
  EXPECT_EQ(l.scale(), 256);
  l.update(true);  // never below the minimum
  EXPECT_EQ(l.scale(), 256);
  // Growth once window steps pass without overflow after the last one.
  for (int i = 0; i < 3; ++i) {
    l.update(false);
    EXPECT_EQ(l.scale(), 256) << i;
  }
  l.update(false);
  EXPECT_EQ(l.scale(), 512);
  for (int i = 0; i < 4; ++i)
    l.update(false);
  EXPECT_EQ(l.scale(), 1024);
}

TEST(LossScaler, StateRoundTrips) {
  LossScaler::Settings s;
  s.dynamic = true;
  LossScaler a(s), b(s);
  a.update(true);
  a.update(true);
  b.restore(a.state());
  a.update(false);
  b.update(false);
  EXPECT_EQ(a.scale(), b.scale());
  EXPECT_EQ(a.state().iteration, b.state().iteration);
}

// DeepSpeed's consecutive_hysteresis: a step without overflow refills the allowance, so
// only overflows in a row lower the scale.
TEST(LossScaler, ConsecutiveHysteresisRefillsOnEveryCleanStep) {
  LossScaler::Settings s;
  s.dynamic = true;
  s.initial_scale_power = 10;
  s.hysteresis = 2;
  s.window = 1000;
  LossScaler plain(s);
  s.consecutive_hysteresis = true;
  LossScaler consecutive(s);
  for (LossScaler *l : {&plain, &consecutive}) {
    l->update(true);   // absorbed by the hysteresis
    l->update(false);  // consecutive: the allowance is back to 2
    l->update(true);
  }
  EXPECT_EQ(plain.scale(), 512);  // the second overflow found the allowance spent
  EXPECT_EQ(consecutive.scale(), 1024);
  consecutive.update(true);  // two in a row
  EXPECT_EQ(consecutive.scale(), 512);
}
