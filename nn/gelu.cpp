#include <zerort/nn/gelu.hpp>

#include <algorithm>

#include <zerort/nn/gelu_math.hpp>
#include <zerort/nn/host_loops.hpp>

namespace zrt::nn {
namespace {
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
  const int64_t n = static_cast<int64_t>(inp.extent(0));
  if constexpr (host_loops::taken_for<T>) {
    Kokkos::parallel_for("gelu_forward", RangePolicy(0, host_loops::chunks(n)), [=](int64_t c) {
      const int64_t i = c * host_loops::kChunk;
      host_loops::gelu_tanh_forward(out.data() + i, inp.data() + i,
                                    std::min(host_loops::kChunk, n - i));
    });
  } else {
    Kokkos::parallel_for(
        "gelu_forward", RangePolicy(0, n),
        KOKKOS_LAMBDA(int64_t i) { out(i) = gelu_tanh(inp(i)); });
  }
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
  const int64_t n = static_cast<int64_t>(inp.extent(0));
  if constexpr (host_loops::taken_for<T>) {
    Kokkos::parallel_for("gelu_backward", RangePolicy(0, host_loops::chunks(n)), [=](int64_t c) {
      const int64_t i = c * host_loops::kChunk;
      host_loops::gelu_tanh_backward(dinp.data() + i, inp.data() + i, dout.data() + i,
                                     std::min(host_loops::kChunk, n - i));
    });
  } else {
    Kokkos::parallel_for(
        "gelu_backward", RangePolicy(0, n),
        KOKKOS_LAMBDA(int64_t i) { dinp(i) = gelu_tanh_backward(inp(i), dout(i)); });
  }
}

#define NN_INSTANTIATE(T)                                   \
  template void gelu_forward<T>(Vec<T>, CVec<T>, GeluForm); \
  template void gelu_backward<T>(Vec<T>, CVec<T>, CVec<T>, GeluForm);
NN_INSTANTIATE(float)
NN_INSTANTIATE(double)
#undef NN_INSTANTIATE

}  // namespace zrt::nn
