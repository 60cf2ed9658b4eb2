#include <zerort/nn/rows.hpp>

namespace zrt::nn {

using Policy2 = Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>;

template <class T>
void gather_rows(Mat<T> out, CMat<T> inp, Tokens rows) {
  const int64_t P = static_cast<int64_t>(out.extent(0)), C = static_cast<int64_t>(out.extent(1));
  Kokkos::parallel_for(
      "gather_rows", Policy2({0, 0}, {P, C}),
      KOKKOS_LAMBDA(int64_t p, int64_t c) { out(p, c) = inp(rows(p), c); });
}

template <class T>
void scatter_add_rows(Mat<T> dinp, CMat<T> dout, Tokens rows) {
  const int64_t P = static_cast<int64_t>(dout.extent(0)), C = static_cast<int64_t>(dout.extent(1));
  Kokkos::parallel_for(
      "scatter_add_rows", Policy2({0, 0}, {P, C}),
      KOKKOS_LAMBDA(int64_t p, int64_t c) { dinp(rows(p), c) += dout(p, c); });
}

#define NN_INSTANTIATE(T)                                \
  template void gather_rows<T>(Mat<T>, CMat<T>, Tokens); \
  template void scatter_add_rows<T>(Mat<T>, CMat<T>, Tokens);
NN_INSTANTIATE(float)
NN_INSTANTIATE(double)
#undef NN_INSTANTIATE

}  // namespace zrt::nn
