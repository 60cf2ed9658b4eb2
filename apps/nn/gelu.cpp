#include "gelu.hpp"

#include "fast_tanh.hpp"

namespace nn {
namespace {
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)
constexpr double kCubic = 0.044715;
constexpr double kInvSqrt2 = 0.70710678118654752440;    // 1/sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1/sqrt(2 pi)
}  // namespace

template <class T>
void gelu_forward(Vec<T> out, CVec<T> inp, GeluForm form) {
  if (form == GeluForm::erf) {
    Kokkos::parallel_for(
        "gelu_erf_forward", RangePolicy(0, static_cast<int64_t>(inp.extent(0))),
        KOKKOS_LAMBDA(int64_t i) {
          const T x = inp(i);
          out(i) = T(0.5) * x * (T(1) + kmath::erf(x * T(kInvSqrt2)));
        });
    return;
  }
  Kokkos::parallel_for(
      "gelu_forward", RangePolicy(0, static_cast<int64_t>(inp.extent(0))),
      KOKKOS_LAMBDA(int64_t i) {
        const T x = inp(i);
        out(i) = T(0.5) * x * (T(1) + fast_tanh(T(kSqrt2OverPi) * (x + T(kCubic) * x * x * x)));
      });
}

template <class T>
void gelu_backward(Vec<T> dinp, CVec<T> inp, CVec<T> dout, GeluForm form) {
  if (form == GeluForm::erf) {
    // d/dx: Phi(x) + x phi(x), the normal distribution's CDF and density.
    Kokkos::parallel_for(
        "gelu_erf_backward", RangePolicy(0, static_cast<int64_t>(inp.extent(0))),
        KOKKOS_LAMBDA(int64_t i) {
          const T x = inp(i);
          const T cdf = T(0.5) * (T(1) + kmath::erf(x * T(kInvSqrt2)));
          const T pdf = T(kInvSqrt2Pi) * kmath::exp(T(-0.5) * x * x);
          dinp(i) = (cdf + x * pdf) * dout(i);
        });
    return;
  }
  Kokkos::parallel_for(
      "gelu_backward", RangePolicy(0, static_cast<int64_t>(inp.extent(0))),
      KOKKOS_LAMBDA(int64_t i) {
        const T x = inp(i);
        const T u = T(kSqrt2OverPi) * (x + T(kCubic) * x * x * x);
        const T th = fast_tanh(u);
        // d/dx: 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx
        const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kCubic) * x * x);
        const T local = T(0.5) * (T(1) + th) + T(0.5) * x * (T(1) - th * th) * du;
        dinp(i) = local * dout(i);
      });
}

#define NN_INSTANTIATE(T)                                   \
  template void gelu_forward<T>(Vec<T>, CVec<T>, GeluForm); \
  template void gelu_backward<T>(Vec<T>, CVec<T>, CVec<T>, GeluForm);
NN_INSTANTIATE(float)
NN_INSTANTIATE(double)
#undef NN_INSTANTIATE

}  // namespace nn
