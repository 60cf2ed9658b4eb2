#include <gtest/gtest.h>

#include "apps/tools/bench/alpha_beta.hpp"

TEST(AlphaBeta, RecoversLatencyAndInverseBandwidth) {
  std::vector<Sample> s;
  for (double b = 1024; b <= 64.0 * 1024 * 1024; b *= 4)
    s.push_back({b, 20e-6 + b / 5e9});
  AlphaBeta f = fit_alpha_beta(s);
  EXPECT_NEAR(f.alpha, 20e-6, 1e-9);
  EXPECT_NEAR(f.beta, 1 / 5e9, 1e-15);
  EXPECT_TRUE(f.sound) << f.problem;
  EXPECT_LT(f.max_residual, 1e-6);
}

TEST(AlphaBeta, OneSizeIsNotAFit) {
  AlphaBeta f = fit_alpha_beta({{4096, 1e-3}, {4096, 1e-3}});
  EXPECT_DOUBLE_EQ(f.alpha, 1e-3);
  EXPECT_EQ(f.beta, 0);
  EXPECT_FALSE(f.sound);
  EXPECT_NE(f.problem.find("one message size"), std::string::npos) << f.problem;
}

TEST(AlphaBeta, NoSampleIsNotAFit) {
  AlphaBeta f = fit_alpha_beta({});
  EXPECT_FALSE(f.sound);
  EXPECT_EQ(f.problem, "no timed sample");
}

TEST(AlphaBeta, TimeFallingWithSizeIsFlagged) {
  AlphaBeta f = fit_alpha_beta({{1024, 2e-3}, {1 << 20, 1e-3}});
  EXPECT_FALSE(f.sound);
  EXPECT_NE(f.problem.find("beta <= 0"), std::string::npos) << f.problem;
}

TEST(AlphaBeta, LargeResidualsAreFlagged) {
  // A line through the small and large sizes, and a middle size 4x slower than it: the
  // model does not describe this backend.
  std::vector<Sample> s;
  for (double b = 1024; b <= 64.0 * 1024 * 1024; b *= 4)
    s.push_back({b, 20e-6 + b / 5e9});
  s[4].seconds *= 4;
  AlphaBeta f = fit_alpha_beta(s);
  EXPECT_FALSE(f.sound);
  EXPECT_GT(f.max_residual, kMaxResidual);
  EXPECT_NE(f.problem.find("misses the time"), std::string::npos) << f.problem;
}

TEST(AlphaBeta, UnresolvedLatencyFitsThroughTheOrigin) {
  // Large sizes only, a little noise: the free fit's latency comes out negative.
  AlphaBeta f = fit_alpha_beta({{1 << 20, 0.99e-4}, {1 << 22, 4.2e-4}, {1 << 24, 16.6e-4}});
  EXPECT_EQ(f.alpha, 0);
  EXPECT_NEAR(f.beta, 1e-4 / (1 << 20), 0.05e-4 / (1 << 20));
  EXPECT_TRUE(f.sound) << f.problem;
}
