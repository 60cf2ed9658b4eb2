#include <zerort/nn/crossentropy.hpp>

#include <zerort/nn/block_sum.hpp>
#include <zerort/nn/host_loops.hpp>
#include <zerort/nn/softmax_exp.hpp>

namespace zrt::nn {

template <class T>
T crossentropy_forward(Mat<T> logits, Vec<T> losses, Tokens targets) {
  const int N = static_cast<int>(logits.extent(0)), V = static_cast<int>(logits.extent(1));
  Kokkos::parallel_for(
      "crossentropy_forward", TeamPolicy(N, Kokkos::AUTO), KOKKOS_LAMBDA(const TeamMember &team) {
        const int n = team.league_rank();
        T maxv = logits(n, 0);
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, V),
            [&](int v, T &m) {
              if (logits(n, v) > m) m = logits(n, v);
            },
            Kokkos::Max<T>(maxv));
        const T target_logit = logits(n, targets(n));
        team.team_barrier();  // everyone has read the target's logit before it changes
        // exp once, in place (softmax_exp.hpp: a logit more than 60 below the largest gets
        // probability 0); then the sum, then normalize.
        team_softmax_exp<T>(team, &logits(n, 0), maxv, V);
        // The denominator: in blocks on the host (block_sum.hpp), whose team of one thread
        // would otherwise add 50,257 terms in a row.
        const T sum = team_sum<T>(team, V, [&](int v) { return logits(n, v); });
        const T inv = T(1) / sum;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, V), [&](int v) { logits(n, v) *= inv; });
        // log-sum-exp form: exact even where the probability underflows.
        Kokkos::single(Kokkos::PerTeam(team),
                       [&]() { losses(n) = maxv + kmath::log(sum) - target_logit; });
      });
  // The mean in blocks, by one thread: the same order whatever the execution space and
  // its threads (a range reduction's order depends on them).
  T total = 0;
  Kokkos::parallel_reduce(
      "crossentropy_mean", RangePolicy(0, 1),
      KOKKOS_LAMBDA(int, T &s) { s += block_sum<T>(N, [&](int64_t n) { return losses(n); }); },
      total);
  return total / N;
}

template <class T>
void crossentropy_backward(Mat<T> probs, Tokens targets, T dloss) {
  const int N = static_cast<int>(probs.extent(0)), V = static_cast<int>(probs.extent(1));
  Kokkos::parallel_for(
      "crossentropy_backward", Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>({0, 0}, {N, V}),
      KOKKOS_LAMBDA(int n, int v) {
        const T indicator = v == targets(n) ? T(1) : T(0);
        probs(n, v) = (probs(n, v) - indicator) * dloss;
      });
}

template <class T>
int64_t crossentropy_correct(CMat<T> scores, Tokens targets) {
  const int N = static_cast<int>(scores.extent(0)), V = static_cast<int>(scores.extent(1));
  int64_t correct = 0;
  if constexpr (host_loops::taken_for<T>) {
    // In the host's widest vectors (a scalar scan of BERT's 30,522 scores a row was 0.2% of
    // a step, perf, 2026-12-06).
    Kokkos::parallel_reduce(
        "crossentropy_correct", RangePolicy(0, N),
        [=](int n, int64_t &count) {
          count += host_loops::first_max_index(&scores(n, 0), V) == targets(n) ? 1 : 0;
        },
        correct);
  } else {
    Kokkos::parallel_reduce(
        "crossentropy_correct", RangePolicy(0, N),
        KOKKOS_LAMBDA(int n, int64_t &count) {
          int best = 0;
          for (int v = 1; v < V; ++v)
            if (scores(n, v) > scores(n, best)) best = v;
          count += best == targets(n) ? 1 : 0;
        },
        correct);
  }
  return correct;
}

#define NN_INSTANTIATE(T)                                     \
  template T crossentropy_forward<T>(Mat<T>, Vec<T>, Tokens); \
  template void crossentropy_backward<T>(Mat<T>, Tokens, T);  \
  template int64_t crossentropy_correct<T>(CMat<T>, Tokens);
NN_INSTANTIATE(float)
NN_INSTANTIATE(double)
#undef NN_INSTANTIATE

}  // namespace zrt::nn
