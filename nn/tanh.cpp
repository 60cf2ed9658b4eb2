#include <zerort/nn/tanh.hpp>

namespace zrt::nn {

template <class T>
void tanh_forward(Vec<T> out, CVec<T> inp) {
  Kokkos::parallel_for(
      "tanh_forward", RangePolicy(0, static_cast<int64_t>(inp.extent(0))),
      KOKKOS_LAMBDA(int64_t i) { out(i) = kmath::tanh(inp(i)); });
}

template <class T>
void tanh_backward(Vec<T> dinp, CVec<T> out, CVec<T> dout) {
  Kokkos::parallel_for(
      "tanh_backward", RangePolicy(0, static_cast<int64_t>(out.extent(0))),
      KOKKOS_LAMBDA(int64_t i) { dinp(i) = (T(1) - out(i) * out(i)) * dout(i); });
}

#define NN_INSTANTIATE(T)                         \
  template void tanh_forward<T>(Vec<T>, CVec<T>); \
  template void tanh_backward<T>(Vec<T>, CVec<T>, CVec<T>);
NN_INSTANTIATE(float)
NN_INSTANTIATE(double)
#undef NN_INSTANTIATE

}  // namespace zrt::nn
