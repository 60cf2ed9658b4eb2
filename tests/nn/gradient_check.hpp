// Central finite differences against an analytic gradient, in double precision.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "device_buffer.hpp"

namespace zrt::nn::test {

/// |analytic - numeric| / max(|analytic|, |numeric|, 1): relative where the gradient is
/// large, absolute where it is small (where differences of the loss are all noise).
inline double gradient_error(double analytic, double numeric) {
  return std::abs(analytic - numeric) / std::max({std::abs(analytic), std::abs(numeric), 1.0});
}

/// The largest gradient_error over the elements of @p x (all of them, or the listed ones),
/// perturbing each by +-h and re-evaluating @p loss (which reads x's device copy).
inline double max_gradient_error(const std::string &what, DeviceBuffer<double> &x,
                                 const std::vector<double> &analytic,
                                 const std::function<double()> &loss,
                                 std::vector<size_t> indices = {}, double h = 1e-6) {
  if (indices.empty())
    for (size_t i = 0; i < x.size(); ++i)
      indices.push_back(i);
  double worst = 0;
  for (size_t i : indices) {
    const double orig = x.host[i];
    x.host[i] = orig + h;
    x.to_device();
    const double plus = loss();
    x.host[i] = orig - h;
    x.to_device();
    const double minus = loss();
    x.host[i] = orig;
    x.to_device();
    worst = std::max(worst, gradient_error(analytic[i], (plus - minus) / (2 * h)));
  }
  std::printf("  %-28s %4zu elements  max error %.2e\n", what.c_str(), indices.size(), worst);
  return worst;
}

/// sum(r * y): a scalar loss whose gradient with respect to y is r.
inline double dot(const std::vector<double> &r, const std::vector<double> &y) {
  double s = 0;
  for (size_t i = 0; i < r.size(); ++i)
    s += r[i] * y[i];
  return s;
}

}  // namespace zrt::nn::test
