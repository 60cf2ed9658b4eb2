#include <zerort/nn/encoder.hpp>

namespace zrt::nn {

template <class T>
void encoder_forward(Mat<T> out, Tokens tokens, CMat<T> wte, CMat<T> wpe, int B, int Tn) {
  const int C = static_cast<int>(out.extent(1));
  Kokkos::parallel_for(
      "encoder_forward", Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>({0, 0}, {B * Tn, C}),
      KOKKOS_LAMBDA(int bt, int c) { out(bt, c) = wte(tokens(bt), c) + wpe(bt % Tn, c); });
}

template <class T>
void encoder_backward(Mat<T> dwte, Mat<T> dwpe, CMat<T> dout, Tokens tokens, int B, int Tn,
                      T beta) {
  const int C = static_cast<int>(dout.extent(1)), maxT = static_cast<int>(dwpe.extent(0));
  // One thread per channel walks the positions in order: a deterministic scatter-add with
  // no atomics, even where a token repeats.
  Kokkos::parallel_for(
      "encoder_backward_wte", RangePolicy(0, C), KOKKOS_LAMBDA(int c) {
        for (int bt = 0; bt < B * Tn; ++bt)
          dwte(tokens(bt), c) += dout(bt, c);
      });
  Kokkos::parallel_for(
      "encoder_backward_wpe", Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>({0, 0}, {maxT, C}),
      KOKKOS_LAMBDA(int t, int c) {
        T sum = 0;
        if (t < Tn)
          for (int b = 0; b < B; ++b)
            sum += dout(b * Tn + t, c);
        store_or_add(dwpe(t, c), beta, sum);
      });
}

#define NN_INSTANTIATE(T)                                                       \
  template void encoder_forward<T>(Mat<T>, Tokens, CMat<T>, CMat<T>, int, int); \
  template void encoder_backward<T>(Mat<T>, Mat<T>, CMat<T>, Tokens, int, int, T);
NN_INSTANTIATE(float)
NN_INSTANTIATE(double)
#undef NN_INSTANTIATE

}  // namespace zrt::nn
