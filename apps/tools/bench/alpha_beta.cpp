#include "alpha_beta.hpp"

#include <fmt/format.h>

#include <cmath>

AlphaBeta fit_alpha_beta(const std::vector<Sample> &samples) {
  // Minimise sum w (alpha + beta x - t)^2 with w = 1/t^2: the 2x2 normal equations.
  double sw = 0, sx = 0, sxx = 0, st = 0, sxt = 0;
  for (const Sample &s : samples) {
    if (s.seconds <= 0) continue;
    double w = 1.0 / (s.seconds * s.seconds);
    sw += w;
    sx += w * s.bytes;
    sxx += w * s.bytes * s.bytes;
    st += w * s.seconds;
    sxt += w * s.bytes * s.seconds;
  }
  AlphaBeta fit;
  double det = sw * sxx - sx * sx;
  if (sw == 0) {
    fit.problem = "no timed sample";
    return fit;
  }
  if (det <= 1e-30 * sw * sxx) {
    fit.alpha = st / sw;
    fit.problem = "one message size only: a fit needs two or more (--min-bytes below --max-bytes)";
    return fit;
  }
  fit.alpha = (sxx * st - sx * sxt) / det;
  fit.beta = (sw * sxt - sx * st) / det;
  if (fit.alpha < 0 && sxx > 0) {
    // A latency below what these sizes resolve: the line through the origin instead.
    fit.alpha = 0;
    fit.beta = sxt / sxx;
  }
  const Sample *worst = nullptr;
  for (const Sample &s : samples) {
    if (s.seconds <= 0) continue;
    const double r = std::fabs(fit.alpha + fit.beta * s.bytes - s.seconds) / s.seconds;
    if (worst == nullptr || r > fit.max_residual) {
      fit.max_residual = r;
      worst = &s;
    }
  }
  if (fit.beta <= 0)
    fit.problem = "time does not grow with size (beta <= 0)";
  else if (fit.max_residual > kMaxResidual)
    fit.problem = fmt::format("the line misses the time at {:.0f} bytes by {:.0f}%", worst->bytes,
                              100 * fit.max_residual);
  fit.sound = fit.problem.empty();
  return fit;
}
