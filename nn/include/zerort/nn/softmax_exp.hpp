// The exponentials of the layers' softmaxes (the loss's over the vocabulary, attention's
// over the keys), one definition for both: exp(x - max) by fast_exp, and 0 where x is more
// than 60 below the row's largest. Below e^-60 (1e-26) a term cannot change the sum (at
// least 1, the largest's), and exps that end up subnormal, as they do once a trained model
// is confident, are an order of magnitude slower in the sum, the normalization and the
// products after them. The exp is a pass of its own, apart from the sum, so that it
// vectorizes (fast_exp.hpp; glibc's expf is a call per element).
#pragma once

#include "fast_exp.hpp"
#include "host_loops.hpp"
#include "tensor.hpp"

namespace zrt::nn {

/// exp(x - max), or 0 where x - max < -60.
template <class T>
KOKKOS_INLINE_FUNCTION T softmax_exp(T x, T max) {
  const T d = x - max;
  const T e = fast_exp(d);
  return d < T(-60) ? T(0) : e;
}

/// row[i] = softmax_exp(row[i], max) for i < n by the calling thread, in a host execution
/// space: float in the host's widest vectors (host_loops::exp_below_max), others in a loop.
template <class T>
inline void host_softmax_exp(T *row, T max, int64_t n) {
  if constexpr (host_loops::taken_for<T>) {
    host_loops::exp_below_max(row, max, n);
  } else {
    for (int64_t i = 0; i < n; ++i)
      row[i] = softmax_exp(row[i], max);
  }
}

/// row[i] = softmax_exp(row[i], max) for i < n by a team, then a team barrier (the sum that
/// follows reads what the team's other threads wrote): on the host (host_loops::taken_for)
/// in its widest vectors by one thread, host teams being one thread (Kokkos::AUTO); on a
/// device over the team's threads. A function rather than a branch in each kernel, as
/// team_sum (block_sum.hpp) is.
template <class T>
KOKKOS_INLINE_FUNCTION void team_softmax_exp(const TeamMember &team, T *row, T max, int n) {
  if constexpr (host_loops::taken_for<T>) {
    Kokkos::single(Kokkos::PerTeam(team), [&]() { host_loops::exp_below_max(row, max, n); });
  } else {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n),
                         [&](int i) { row[i] = softmax_exp(row[i], max); });
  }
  team.team_barrier();
}

}  // namespace zrt::nn
