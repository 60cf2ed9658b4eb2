// GELU's tanh and exact (erf) forms at one element, forward and backward: the one
// definition that the layers' Kokkos kernels and the host's vectorized loops
// (host_loops.hpp) both evaluate, so that the two give the same bits.
#pragma once

#include <type_traits>

#include "fast_normal_cdf.hpp"
#include "fast_tanh.hpp"
#include "tensor.hpp"

namespace zrt::nn {

namespace gelu_constants {
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)
constexpr double kCubic = 0.044715;
}  // namespace gelu_constants

/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <class T>
KOKKOS_INLINE_FUNCTION T gelu_tanh(T x) {
  using namespace gelu_constants;
  return T(0.5) * x * (T(1) + fast_tanh(T(kSqrt2OverPi) * (x + T(kCubic) * x * x * x)));
}

/// gelu_tanh'(x) * dout.
template <class T>
KOKKOS_INLINE_FUNCTION T gelu_tanh_backward(T x, T dout) {
  using namespace gelu_constants;
  const T u = T(kSqrt2OverPi) * (x + T(kCubic) * x * x * x);
  const T th = fast_tanh(u);
  // d/dx: 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx
  const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kCubic) * x * x);
  const T local = T(0.5) * (T(1) + th) + T(0.5) * x * (T(1) - th * th) * du;
  return local * dout;
}

/// x Phi(x), Phi the standard normal CDF (fast_normal_cdf.hpp).
template <class T>
KOKKOS_INLINE_FUNCTION T gelu_erf(T x) {
  if constexpr (std::is_same_v<T, float>)
    return x * normal_cdf(x);
  else
    return T(0.5) * x * (T(1) + kmath::erf(x * T(normal_constants::kInvSqrt2)));
}

/// gelu_erf'(x) * dout: (Phi(x) + x phi(x)) dout.
template <class T>
KOKKOS_INLINE_FUNCTION T gelu_erf_backward(T x, T dout) {
  return (normal_cdf(x) + x * normal_pdf(x)) * dout;
}

}  // namespace zrt::nn
