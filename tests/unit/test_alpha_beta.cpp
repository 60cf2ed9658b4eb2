#include <gtest/gtest.h>

#include "apps/bench/alpha_beta.hpp"

TEST(AlphaBeta, RecoversLatencyAndInverseBandwidth) {
  std::vector<Sample> s;
  for (double b = 1024; b <= 64.0 * 1024 * 1024; b *= 4)
    s.push_back({b, 20e-6 + b / 5e9});
  AlphaBeta f = fit_alpha_beta(s);
  EXPECT_NEAR(f.alpha, 20e-6, 1e-9);
  EXPECT_NEAR(f.beta, 1 / 5e9, 1e-15);
}

TEST(AlphaBeta, OneSizeGivesLatencyOnly) {
  AlphaBeta f = fit_alpha_beta({{4096, 1e-3}, {4096, 1e-3}});
  EXPECT_DOUBLE_EQ(f.alpha, 1e-3);
  EXPECT_EQ(f.beta, 0);
}
