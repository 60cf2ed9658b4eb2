// The alpha-beta cost model of a collective, t(bytes) = alpha + beta * bytes: alpha is the
// latency, beta the inverse bandwidth. zrt-bench fits it per backend so the planner (and
// the registry's size threshold) can compare backends by formula.
#pragma once

#include <string>
#include <vector>

struct Sample {
  double bytes = 0;
  double seconds = 0;
};

struct AlphaBeta {
  double alpha = 0;  // seconds
  double beta = 0;   // seconds per byte
  // A fit a planner may use: two or more distinct sizes, a positive beta, and every sample
  // within kMaxResidual of the line. Otherwise `problem` says why.
  bool sound = false;
  std::string problem;
  double max_residual = 0;  // the largest |fit - t| / t over the samples
};

// Residuals beyond this (relative) mark the model as not describing the measurements: a
// protocol switch between sizes, or noise larger than the signal.
inline constexpr double kMaxResidual = 0.5;

// Least squares on relative error (weights 1/t^2): each size counts alike, so the small
// ones fix alpha and the large ones beta. A negative alpha (a latency the sizes do not
// resolve) becomes 0, with beta fitted through the origin. With fewer than two distinct
// sizes there is no line: alpha is the mean time, beta 0, and the fit is not sound.
AlphaBeta fit_alpha_beta(const std::vector<Sample> &samples);
