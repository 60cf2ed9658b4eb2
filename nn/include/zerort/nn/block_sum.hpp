// A deterministic sum whose rounding error grows with the logarithm of the term count, not
// with the count: the long sums of the layers (the softmax's denominator over 50,257 logits,
// LayerNorm's mean and variance over the channels, the loss's mean over the rows). Summed
// one after another in float, the softmax's denominator was off by up to 1.5e-5 relative
// per row, and GPT-2 d2's float losses drifted 3.2e-7 from the same model's in double over
// ten steps (tests/gpt2/test_model.cpp).
//
// The terms go in blocks of kBlock: kLanes running sums take every kLanes-th term of the
// block (independent chains the compiler may keep in one vector register, without changing
// a bit), the lanes are added pairwise, and the block sums pairwise too, by a binary carry
// (numpy's pairwise sum, with a stack instead of recursion so that a device thread can run
// it). The order depends only on the count: the same bits in every execution space, on every
// rank count and stage.
#pragma once

#include <cstdint>

#include <Kokkos_Core.hpp>

#include "host_loops.hpp"
#include "tensor.hpp"

namespace zrt::nn {

/// The sum of @p term(i) for i in [0, n), in T.
template <class T, class Term>
KOKKOS_INLINE_FUNCTION T block_sum(int64_t n, const Term &term) {
  constexpr int kLanes = 8, kBlock = 64;
  T level[64];          // level[k]: the sum of 2^k blocks, where bit k of `blocks` is set
  uint64_t blocks = 0;  // blocks summed so far
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    T lane[kLanes] = {};
    const int64_t end = begin + kBlock < n ? begin + kBlock : n;
    int64_t i = begin;
    for (; i + kLanes <= end; i += kLanes)
      for (int j = 0; j < kLanes; ++j)
        lane[j] += term(i + j);
    for (int j = 0; i < end; ++i, ++j)
      lane[j] += term(i);
    for (int width = kLanes / 2; width > 0; width /= 2)
      for (int j = 0; j < width; ++j)
        lane[j] += lane[j + width];
    T s = lane[0];
    int k = 0;
    for (uint64_t carry = blocks; carry & 1; carry >>= 1, ++k)
      s = level[k] + s;
    level[k] = s;
    ++blocks;
  }
  T total = 0;
  bool first = true;
  for (int k = 0; k < 64 && (blocks >> k) != 0; ++k)
    if ((blocks >> k) & 1) {
      total = first ? level[k] : level[k] + total;
      first = false;
    }
  return total;
}

/// The sum of @p term(i) for i in [0, n) by a team, the same on all its threads: on the
/// host (host_loops::taken_for, whose teams are one thread) by block_sum; on a device in the
/// team's own tree of its threads' partial sums. A function rather than a branch in each
/// kernel: CUDA's extended lambdas may not first capture a variable inside `if constexpr`.
template <class T, class Term>
KOKKOS_INLINE_FUNCTION T team_sum(const TeamMember &team, int n, const Term &term) {
  T sum = 0;
  if constexpr (host_loops::taken_for<T>) {
    Kokkos::single(
        Kokkos::PerTeam(team), [&](T &s) { s = block_sum<T>(n, term); }, sum);
  } else {
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, n), [&](int i, T &s) { s += term(i); }, sum);
  }
  return sum;
}

}  // namespace zrt::nn
