#include <zerort/nn/layernorm.hpp>

#include <zerort/nn/block_sum.hpp>
#include <zerort/nn/column_sums.hpp>

namespace zrt::nn {

template <class T>
void layernorm_forward(Mat<T> out, Vec<T> mean, Vec<T> rstd, CMat<T> inp, CVec<T> weight,
                       CVec<T> bias, T eps) {
  const int N = static_cast<int>(inp.extent(0)), C = static_cast<int>(inp.extent(1));
  // One team per row; the team's threads share the row's two reductions.
  Kokkos::parallel_for(
      "layernorm_forward", TeamPolicy(N, Kokkos::AUTO), KOKKOS_LAMBDA(const TeamMember &team) {
        const int n = team.league_rank();
        // The mean and the variance: in blocks on the host (block_sum.hpp), whose team of
        // one thread would otherwise add the channels in a row.
        const T m = team_sum<T>(team, C, [&](int c) { return inp(n, c); }) / C;
        const T sq = team_sum<T>(team, C, [&](int c) {
          const T d = inp(n, c) - m;
          return d * d;
        });
        // Biased variance, as PyTorch's LayerNorm (GPT-2's eps is 1e-5, BERT's 1e-12).
        const T s = T(1) / kmath::sqrt(sq / C + eps);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, C),
                             [&](int c) { out(n, c) = (inp(n, c) - m) * s * weight(c) + bias(c); });
        Kokkos::single(Kokkos::PerTeam(team), [&]() {
          mean(n) = m;
          rstd(n) = s;
        });
      });
}

template <class T>
void layernorm_backward(Mat<T> dinp, Vec<T> dweight, Vec<T> dbias, CMat<T> dout, CMat<T> inp,
                        CVec<T> weight, CVec<T> mean, CVec<T> rstd, T beta_dinp, T beta_param) {
  const int N = static_cast<int>(inp.extent(0)), C = static_cast<int>(inp.extent(1));
  // dinp: with norm = (x - mean) * rstd and dnorm = weight * dout,
  //   dx = rstd * (dnorm - mean_c(dnorm) - norm * mean_c(dnorm * norm)).
  Kokkos::parallel_for(
      "layernorm_backward_input", TeamPolicy(N, Kokkos::AUTO),
      KOKKOS_LAMBDA(const TeamMember &team) {
        const int n = team.league_rank();
        const T m = mean(n), s = rstd(n);
        // In blocks, as the forward's (block_sum.hpp), for their accuracy over many
        // channels; on the host no faster than the chain of additions before (perf).
        const T dnorm_sum = team_sum<T>(team, C, [&](int c) { return weight(c) * dout(n, c); });
        const T dnorm_norm_sum = team_sum<T>(
            team, C, [&](int c) { return weight(c) * dout(n, c) * (inp(n, c) - m) * s; });
        const T dnorm_mean = dnorm_sum / C, dnorm_norm_mean = dnorm_norm_sum / C;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, C), [&](int c) {
          const T norm = (inp(n, c) - m) * s;
          const T d = s * (weight(c) * dout(n, c) - dnorm_mean - norm * dnorm_norm_mean);
          store_or_add(dinp(n, c), beta_dinp, d);
        });
      });
  // dweight, dbias: each channel's rows summed in order (deterministic).
  column_sums<T, 2>(
      "layernorm_backward_params", N, C,
      KOKKOS_LAMBDA(int n, int c) {
        return Kokkos::Array<T, 2>{dout(n, c) * (inp(n, c) - mean(n)) * rstd(n), dout(n, c)};
      },
      KOKKOS_LAMBDA(int c, const Kokkos::Array<T, 2> &sums) {
        store_or_add(dweight(c), beta_param, sums[0]);
        store_or_add(dbias(c), beta_param, sums[1]);
      });
}

#define NN_INSTANTIATE(T)                                                                         \
  template void layernorm_forward<T>(Mat<T>, Vec<T>, Vec<T>, CMat<T>, CVec<T>, CVec<T>, T);       \
  template void layernorm_backward<T>(Mat<T>, Vec<T>, Vec<T>, CMat<T>, CMat<T>, CVec<T>, CVec<T>, \
                                      CVec<T>, T, T);
NN_INSTANTIATE(float)
NN_INSTANTIATE(double)
#undef NN_INSTANTIATE

}  // namespace zrt::nn
