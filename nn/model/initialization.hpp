// Initial values drawn the same on every rank, platform and standard library: uniform
// numbers straight from mt19937_64's bits (std::uniform_real_distribution's algorithm is
// the library's choice), normal ones through nn's Normal.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace zrt::nn::model {

/// @p n values uniform in [-bound, bound).
inline std::vector<float> uniform_values(std::mt19937_64 &rng, int64_t n, double bound) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = static_cast<float>((static_cast<double>(rng() >> 11) * 0x1.0p-53 * 2.0 - 1.0) * bound);
  return v;
}

/// @p n values normal with mean 0 and deviation @p std.
std::vector<float> normal_values(std::mt19937_64 &rng, int64_t n, double std);

}  // namespace zrt::nn::model
