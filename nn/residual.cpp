#include <zerort/nn/residual.hpp>

namespace zrt::nn {

template <class T>
void residual_forward(Vec<T> out, CVec<T> a, CVec<T> b) {
  Kokkos::parallel_for(
      "residual_forward", RangePolicy(0, static_cast<int64_t>(out.extent(0))),
      KOKKOS_LAMBDA(int64_t i) { out(i) = a(i) + b(i); });
}

template void residual_forward<float>(Vec<float>, CVec<float>, CVec<float>);
template void residual_forward<double>(Vec<double>, CVec<double>, CVec<double>);

}  // namespace zrt::nn
