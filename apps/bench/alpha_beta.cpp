#include "alpha_beta.hpp"

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
  if (sw == 0) return fit;
  if (det <= 1e-30 * sw * sxx) {
    fit.alpha = st / sw;
    return fit;
  }
  fit.alpha = (sxx * st - sx * sxt) / det;
  fit.beta = (sw * sxt - sx * st) / det;
  return fit;
}
