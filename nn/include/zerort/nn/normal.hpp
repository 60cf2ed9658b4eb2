// Standard normal numbers for parameter initialization, the same on every rank, platform
// and standard library (unlike std::normal_distribution, whose algorithm is the library's
// choice): mt19937_64, whose sequence the standard fixes, through Box-Muller.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace zrt::nn {

class Normal {
 public:
  explicit Normal(uint64_t seed) : rng_(seed) {}
  double operator()() {
    if (have_spare_) {
      have_spare_ = false;
      return spare_;
    }
    constexpr double two_pi = 6.283185307179586476925;
    double u1 = (static_cast<double>(rng_() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    double u2 = static_cast<double>(rng_() >> 11) * 0x1.0p-53;          // [0, 1)
    double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(two_pi * u2);
    have_spare_ = true;
    return r * std::cos(two_pi * u2);
  }

 private:
  std::mt19937_64 rng_;
  double spare_ = 0;
  bool have_spare_ = false;
};

}  // namespace zrt::nn
