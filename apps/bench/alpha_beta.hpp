// The alpha-beta cost model of a collective, t(bytes) = alpha + beta * bytes: alpha is the
// latency, beta the inverse bandwidth. zrt-bench fits it per backend so the planner (and
// the registry's size threshold) can compare backends by formula.
#pragma once

#include <vector>

struct Sample {
  double bytes = 0;
  double seconds = 0;
};

struct AlphaBeta {
  double alpha = 0;  // seconds
  double beta = 0;   // seconds per byte
};

// Least squares on relative error (weights 1/t^2): each size counts alike, so the small
// ones fix alpha and the large ones beta. Needs two distinct sizes; else alpha = t.
AlphaBeta fit_alpha_beta(const std::vector<Sample> &samples);
