#include <zerort/nn/attention.hpp>

#include <zerort/nn/block_sum.hpp>
#include <zerort/nn/matmul.hpp>
#include <zerort/nn/softmax_exp.hpp>

namespace zrt::nn {
// Not an unnamed namespace: CUDA's extended lambdas need functions with external linkage.
namespace attention_detail {

using Policy2 = Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>;

// Offsets into the head-major buffers.
// (Shapes by reference: AttentionShape holds a View, whose copy would count references
// at every element.)
KOKKOS_INLINE_FUNCTION int64_t head_offset(const AttentionShape &s, int which, int b, int h) {
  return ((int64_t(which) * s.B + b) * s.NH + h) * s.T * s.hs;  // (3, B, NH, T, hs)
}

// Where head chunk c (hs contiguous elements from column c * hs) of row r of the
// row-major input starts in head-major (n, B, NH, T, hs) order: rows (B*T, n*C) when
// interleaved, (n*B*T, C) when planar (block r / (B*T) is q, k or v).
KOKKOS_INLINE_FUNCTION int64_t chunk_offset(const AttentionShape &s, QkvLayout layout, int r,
                                            int c) {
  const int BT = s.B * s.T;
  const int bt = layout == QkvLayout::planar ? r % BT : r;
  const int which = layout == QkvLayout::planar ? r / BT : c / s.NH;
  const int h = c % s.NH;
  return head_offset(s, which, bt / s.T, h) + int64_t(bt % s.T) * s.hs;
}

// Keys row (b, h, t) of the scores attends to: 0 .. keys-1.
KOKKOS_INLINE_FUNCTION int attended_keys(const AttentionShape &s, int row) {
  const int t = row % s.T;
  if (s.mask == AttentionMask::causal) return t + 1;
  return s.lengths(row / (s.NH * s.T));
}

// rows (B*T, n*C) or planar (n*B*T, C) -> heads (n, B, NH, T, hs), a head's hs contiguous
// elements at a time.
template <class T>
void to_heads(Vec<T> heads, CMat<T> rows, AttentionShape s, QkvLayout layout) {
  const int hs = s.hs;
  Kokkos::parallel_for(
      "attention_to_heads",
      Policy2({0, 0}, {int64_t(rows.extent(0)), int64_t(rows.extent(1)) / hs}),
      KOKKOS_LAMBDA(int r, int c) {
        T *to = heads.data() + chunk_offset(s, layout, r, c);
        const T *from = &rows(r, c * hs);
        for (int i = 0; i < hs; ++i)
          to[i] = from[i];
      });
}

// heads (n, B, NH, T, hs) -> rows (B*T, n*C) or planar (n*B*T, C)
template <class T>
void to_rows(Mat<T> rows, CVec<T> heads, AttentionShape s, QkvLayout layout) {
  const int hs = s.hs;
  Kokkos::parallel_for(
      "attention_to_rows", Policy2({0, 0}, {int64_t(rows.extent(0)), int64_t(rows.extent(1)) / hs}),
      KOKKOS_LAMBDA(int r, int c) {
        const T *from = heads.data() + chunk_offset(s, layout, r, c);
        T *to = &rows(r, c * hs);
        for (int i = 0; i < hs; ++i)
          to[i] = from[i];
      });
}

}  // namespace attention_detail

using namespace attention_detail;

template <class T>
void attention_forward(Mat<T> out, Vec<T> qkvp, Vec<T> att, Vec<T> yp, CMat<T> qkv,
                       AttentionShape s) {
  const T scale = T(1) / std::sqrt(T(s.hs));
  to_heads<T>(qkvp, qkv, s, s.layout);
  T *p = qkvp.data();
  // Every head's product at once (heads and their score matrices are evenly strided):
  // scores (T, T) = scale q k^T.
  const int heads = s.B * s.NH;
  const int64_t hstride = int64_t(s.T) * s.hs, sstride = int64_t(s.T) * s.T;
  gemm_strided_batched<T>("N", "T", s.T, s.T, s.hs, scale, p + head_offset(s, 0, 0, 0), hstride,
                          p + head_offset(s, 1, 0, 0), hstride, T(0), att.data(), sstride, heads);
  // Softmax of each row (b, h, t) over the keys it attends to (t2 <= t with the causal
  // mask, t2 < lengths(b) with padding); zero for the others.
  const int T_ = s.T;
  if constexpr (std::is_same_v<MemSpace, Kokkos::HostSpace>) {
    // A row per iteration over a plain pointer: the team kernel's operations in its order,
    // without a team of one thread around each row. attention_forward of a BERT-base layer
    // (2 x 128 tokens) took 1.72 ms with the team kernel and 1.51 ms with this; backward,
    // 2.34 and 2.13 ms (a micro-benchmark on a 2-core AMD EPYC, 2026-12-06).
    Kokkos::parallel_for("attention_softmax", RangePolicy(0, s.B * s.NH * s.T), [=](int row) {
      const int keys = attended_keys(s, row);
      T *a = att.data() + int64_t(row) * T_;
      T maxv = Kokkos::reduction_identity<T>::max();
      for (int t2 = 0; t2 < keys; ++t2)
        if (a[t2] > maxv) maxv = a[t2];
      host_softmax_exp(a, maxv, keys);
      const T inv = T(1) / block_sum<T>(keys, [a](int64_t t2) { return a[t2]; });
      for (int t2 = 0; t2 < T_; ++t2)
        a[t2] = t2 < keys ? a[t2] * inv : T(0);
    });
  } else {
    Kokkos::parallel_for(
        "attention_softmax", TeamPolicy(s.B * s.NH * s.T, Kokkos::AUTO),
        KOKKOS_LAMBDA(const TeamMember &team) {
          const int row = team.league_rank(), keys = attended_keys(s, row);
          T *a = att.data() + int64_t(row) * T_;
          T maxv = a[0];
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, keys),
              [&](int t2, T &m) {
                if (a[t2] > m) m = a[t2];
              },
              Kokkos::Max<T>(maxv));
          // exp in place as the loss's softmax takes it (softmax_exp.hpp), the sum in blocks:
          // glibc's expf, a call per score, and the sum's chain of dependent additions were
          // 1.2% of a BERT step (perf, 2026-12-06).
          team_softmax_exp<T>(team, a, maxv, keys);
          const T sum = team_sum<T>(team, keys, [&](int t2) { return a[t2]; });
          const T inv = T(1) / sum;
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, T_),
                               [&](int t2) { a[t2] = t2 < keys ? a[t2] * inv : T(0); });
        });
  }
  // y (T, hs) = att v
  gemm_strided_batched<T>("N", "N", s.T, s.hs, s.T, T(1), att.data(), sstride,
                          p + head_offset(s, 2, 0, 0), hstride, T(0), yp.data(), hstride, heads);
  to_rows<T>(out, yp, s, QkvLayout::interleaved);
}

template <class T>
void attention_backward(Mat<T> dqkv, Vec<T> dqkvp, Vec<T> datt, Vec<T> doutp, CMat<T> dout,
                        CVec<T> qkvp, CVec<T> att, AttentionShape s) {
  const T scale = T(1) / std::sqrt(T(s.hs));
  to_heads<T>(doutp, dout, s, QkvLayout::interleaved);
  const T *p = qkvp.data();
  const int heads = s.B * s.NH;
  const int64_t hstride = int64_t(s.T) * s.hs, sstride = int64_t(s.T) * s.T;
  // y = att v:  dv = att^T dy,  datt = dy v^T (each head's products are independent, so
  // doing one kind for every head, then the other, gives the bits of the per-head loop)
  gemm_strided_batched<T>("T", "N", s.T, s.hs, s.T, T(1), att.data(), sstride, doutp.data(),
                          hstride, T(0), dqkvp.data() + head_offset(s, 2, 0, 0), hstride, heads);
  gemm_strided_batched<T>("N", "T", s.T, s.T, s.hs, T(1), doutp.data(), hstride,
                          p + head_offset(s, 2, 0, 0), hstride, T(0), datt.data(), sstride, heads);
  // Softmax backward per row: dscores = att * (datt - sum_t2(datt * att)). For masked
  // keys att is 0, so the mask passes no gradient.
  const int T_ = s.T;
  if constexpr (std::is_same_v<MemSpace, Kokkos::HostSpace>) {
    // Plain pointers on the host, as the forward's softmax.
    Kokkos::parallel_for(
        "attention_softmax_backward", RangePolicy(0, s.B * s.NH * s.T), [=](int row) {
          const int keys = attended_keys(s, row);
          const T *a = att.data() + int64_t(row) * T_;
          T *d = datt.data() + int64_t(row) * T_;
          const T dot = block_sum<T>(keys, [a, d](int64_t t2) { return d[t2] * a[t2]; });
          for (int t2 = 0; t2 < T_; ++t2)
            d[t2] = t2 < keys ? a[t2] * (d[t2] - dot) : T(0);
        });
  } else {
    Kokkos::parallel_for(
        "attention_softmax_backward", TeamPolicy(s.B * s.NH * s.T, Kokkos::AUTO),
        KOKKOS_LAMBDA(const TeamMember &team) {
          const int row = team.league_rank(), keys = attended_keys(s, row);
          const T *a = att.data() + int64_t(row) * T_;
          T *d = datt.data() + int64_t(row) * T_;
          // In blocks, as the forward's sum (block_sum.hpp).
          const T dot = team_sum<T>(team, keys, [&](int t2) { return d[t2] * a[t2]; });
          team.team_barrier();
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, T_),
                               [&](int t2) { d[t2] = t2 < keys ? a[t2] * (d[t2] - dot) : T(0); });
        });
  }
  // scores = scale q k^T:  dq = scale dscores k,  dk = scale dscores^T q
  gemm_strided_batched<T>("N", "N", s.T, s.hs, s.T, scale, datt.data(), sstride,
                          p + head_offset(s, 1, 0, 0), hstride, T(0),
                          dqkvp.data() + head_offset(s, 0, 0, 0), hstride, heads);
  gemm_strided_batched<T>("T", "N", s.T, s.hs, s.T, scale, datt.data(), sstride,
                          p + head_offset(s, 0, 0, 0), hstride, T(0),
                          dqkvp.data() + head_offset(s, 1, 0, 0), hstride, heads);
  to_rows<T>(dqkv, dqkvp, s, s.layout);
}

#define NN_INSTANTIATE(T)                                                                        \
  template void attention_forward<T>(Mat<T>, Vec<T>, Vec<T>, Vec<T>, CMat<T>, AttentionShape);   \
  template void attention_backward<T>(Mat<T>, Vec<T>, Vec<T>, Vec<T>, CMat<T>, CVec<T>, CVec<T>, \
                                      AttentionShape);
NN_INSTANTIATE(float)
NN_INSTANTIATE(double)
#undef NN_INSTANTIATE

}  // namespace zrt::nn
