#include <zerort/nn/embedding.hpp>

namespace zrt::nn {

template <class T>
void embedding_forward(Mat<T> out, Tokens ids, CMat<T> table, T beta) {
  const int N = static_cast<int>(out.extent(0)), C = static_cast<int>(out.extent(1));
  Kokkos::parallel_for(
      "embedding_forward", Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>({0, 0}, {N, C}),
      KOKKOS_LAMBDA(int n, int c) { store_or_add(out(n, c), beta, table(ids(n), c)); });
}

template <class T>
void embedding_backward(Mat<T> dtable, CMat<T> dout, Tokens ids, T beta) {
  const int N = static_cast<int>(dout.extent(0)), C = static_cast<int>(dout.extent(1));
  const int R = static_cast<int>(dtable.extent(0));
  Kokkos::parallel_for(
      "embedding_backward", RangePolicy(0, C), KOKKOS_LAMBDA(int c) {
        if (beta != T(1))
          for (int r = 0; r < R; ++r)
            dtable(r, c) = beta == T(0) ? T(0) : beta * dtable(r, c);
        for (int n = 0; n < N; ++n)
          dtable(ids(n), c) += dout(n, c);
      });
}

#define NN_INSTANTIATE(T)                                         \
  template void embedding_forward<T>(Mat<T>, Tokens, CMat<T>, T); \
  template void embedding_backward<T>(Mat<T>, CMat<T>, Tokens, T);
NN_INSTANTIATE(float)
NN_INSTANTIATE(double)
#undef NN_INSTANTIATE

}  // namespace zrt::nn
