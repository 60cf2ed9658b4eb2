#include <zerort/nn/gelu.hpp>

#include <algorithm>

#include <zerort/nn/gelu_math.hpp>
#include <zerort/nn/host_loops.hpp>

namespace zrt::nn {
// Both forms go through the host's vectorized loops where they serve (host_loops.hpp) and
// through the same one-element definitions (gelu_math.hpp) everywhere else.
template <class T>
void gelu_forward(Vec<T> out, CVec<T> inp, GeluForm form) {
  const int64_t n = static_cast<int64_t>(inp.extent(0));
  const bool erf = form == GeluForm::erf;
  if constexpr (host_loops::taken_for<T>) {
    Kokkos::parallel_for("gelu_forward", RangePolicy(0, host_loops::chunks(n)), [=](int64_t c) {
      const int64_t i = c * host_loops::kChunk, m = std::min(host_loops::kChunk, n - i);
      if (erf)
        host_loops::gelu_erf_forward(out.data() + i, inp.data() + i, m);
      else
        host_loops::gelu_tanh_forward(out.data() + i, inp.data() + i, m);
    });
  } else {
    Kokkos::parallel_for(
        "gelu_forward", RangePolicy(0, n),
        KOKKOS_LAMBDA(int64_t i) { out(i) = erf ? gelu_erf(inp(i)) : gelu_tanh(inp(i)); });
  }
}

template <class T>
void gelu_backward(Vec<T> dinp, CVec<T> inp, CVec<T> dout, GeluForm form) {
  const int64_t n = static_cast<int64_t>(inp.extent(0));
  const bool erf = form == GeluForm::erf;
  if constexpr (host_loops::taken_for<T>) {
    Kokkos::parallel_for("gelu_backward", RangePolicy(0, host_loops::chunks(n)), [=](int64_t c) {
      const int64_t i = c * host_loops::kChunk, m = std::min(host_loops::kChunk, n - i);
      if (erf)
        host_loops::gelu_erf_backward(dinp.data() + i, inp.data() + i, dout.data() + i, m);
      else
        host_loops::gelu_tanh_backward(dinp.data() + i, inp.data() + i, dout.data() + i, m);
    });
  } else {
    Kokkos::parallel_for(
        "gelu_backward", RangePolicy(0, n), KOKKOS_LAMBDA(int64_t i) {
          dinp(i) = erf ? gelu_erf_backward(inp(i), dout(i)) : gelu_tanh_backward(inp(i), dout(i));
        });
  }
}

#define NN_INSTANTIATE(T)                                   \
  template void gelu_forward<T>(Vec<T>, CVec<T>, GeluForm); \
  template void gelu_backward<T>(Vec<T>, CVec<T>, CVec<T>, GeluForm);
NN_INSTANTIATE(float)
NN_INSTANTIATE(double)
#undef NN_INSTANTIATE

}  // namespace zrt::nn
