#include <zerort/nn/matmul.hpp>

#include <algorithm>
#include <type_traits>

#include <zerort/nn/column_sums.hpp>
#include <zerort/nn/host_loops.hpp>

namespace zrt::nn {

template <class T>
void matmul_forward(Mat<T> out, CMat<T> inp, CMat<T> weight, CVec<T> bias) {
  const int N = static_cast<int>(out.extent(0)), OC = static_cast<int>(out.extent(1));
  T beta = 0;
  if (bias.extent(0) > 0) {
    // Start from the bias broadcast over the rows, then let gemm add the product.
    if constexpr (std::is_same_v<MemSpace, Kokkos::HostSpace>) {
      // A row at a time, at the speed of a copy: the two-dimensional range's tiles took
      // three times as long as the bytes need (0.7% of a BERT step, perf, 2026-12-06).
      Kokkos::parallel_for("matmul_forward_bias", RangePolicy(0, N),
                           [=](int n) { std::copy_n(bias.data(), OC, &out(n, 0)); });
    } else {
      Kokkos::parallel_for(
          "matmul_forward_bias", Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>({0, 0}, {N, OC}),
          KOKKOS_LAMBDA(int n, int o) { out(n, o) = bias(o); });
    }
    beta = 1;
  }
  gemm<T>("N", "T", T(1), inp, weight, beta, out);
}

template <class T>
void matmul_backward(Mat<T> dinp, Mat<T> dweight, Vec<T> dbias, CMat<T> dout, CMat<T> inp,
                     CMat<T> weight, T beta_dinp, T beta_param) {
  // An empty dinp: the input needs no gradient (a model's first layer), one product fewer.
  if (dinp.extent(0) > 0) gemm<T>("N", "N", T(1), dout, weight, beta_dinp, dinp);
  gemm<T>("T", "N", T(1), dout, inp, beta_param, dweight);
  if (dbias.extent(0) > 0) {
    const int N = static_cast<int>(dout.extent(0)), OC = static_cast<int>(dout.extent(1));
    if constexpr (host_loops::taken_for<T>) {
      // The same sums in the host's widest vectors (host_loops.hpp), by chunks of columns.
      constexpr int kColumns = 256;
      Kokkos::parallel_for("matmul_backward_bias", RangePolicy(0, (OC + kColumns - 1) / kColumns),
                           [=](int chunk) {
                             const int c0 = chunk * kColumns, width = std::min(kColumns, OC - c0);
                             float sums[kColumns];
                             host_loops::column_sums(sums, &dout(0, c0), N, width, OC);
                             for (int j = 0; j < width; ++j)
                               store_or_add(dbias(c0 + j), beta_param, sums[j]);
                           });
      return;
    }
    column_sums<T, 1>(
        "matmul_backward_bias", N, OC,
        KOKKOS_LAMBDA(int n, int o) { return Kokkos::Array<T, 1>{dout(n, o)}; },
        KOKKOS_LAMBDA(int o, const Kokkos::Array<T, 1> &sum) {
          store_or_add(dbias(o), beta_param, sum[0]);
        });
  }
}

#define NN_INSTANTIATE(T)                                             \
  template void matmul_forward<T>(Mat<T>, CMat<T>, CMat<T>, CVec<T>); \
  template void matmul_backward<T>(Mat<T>, Mat<T>, Vec<T>, CMat<T>, CMat<T>, CMat<T>, T, T);
NN_INSTANTIATE(float)
NN_INSTANTIATE(double)
#undef NN_INSTANTIATE

}  // namespace zrt::nn
