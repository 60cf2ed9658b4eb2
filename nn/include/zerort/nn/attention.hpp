// Multi-head self-attention (the part between the q/k/v projections and the output one):
//   q, k, v = split(qkv) by head;  att = softmax(q k^T / sqrt(hs), mask);  y = att v.
// The mask is GPT-2's causal one (position t attends to keys 0..t) or BERT's padding one
// (every position of sequence b attends to its first lengths(b) keys, the real tokens).
// A masked key gets probability exactly 0 (what adding -inf, or BERT's -10000, before the
// softmax amounts to in float), so masking is skipping.
// Queries, keys and values are first permuted to (3, B, NH, T, hs) so that each head's
// products are plain contiguous matrices for gemm (what llm.c's CUDA version does too).
#pragma once

#include "tensor.hpp"

namespace zrt::nn {

enum class AttentionMask { causal, padding };

/// Where q, k and v are in the input matrix:
///   interleaved  (B*T, 3C): one projection's output, each row [q | k | v] (GPT-2's c_attn)
///   planar       (3*B*T, C): all queries, then all keys, then all values (BERT's three
///                projections, each writing its own (B*T, C) block)
enum class QkvLayout { interleaved, planar };

struct AttentionShape {
  int B, T, NH, hs;  // batch, sequence, heads, head size (C = NH * hs)
  AttentionMask mask = AttentionMask::causal;
  /// padding: real tokens of each sequence (B), each in [1, T]; keys from there on get no
  /// attention. Unused with the causal mask.
  Kokkos::View<const int *, MemSpace> lengths = {};
  QkvLayout layout = QkvLayout::interleaved;
};

/// Given qkv (B*T, 3C), or (3*B*T, C) when planar:
///   qkvp (3, B, NH, T, hs)  queries, keys, values by head (kept for backward)
///   att  (B, NH, T, T)      causal softmax of the scores (kept for backward)
///   yp   (B, NH, T, hs)     scratch
///   out  (B*T, C)           the heads' outputs side by side
template <class T>
void attention_forward(Mat<T> out, Vec<T> qkvp, Vec<T> att, Vec<T> yp, CMat<T> qkv,
                       AttentionShape s);

/// Given dout (B*T, C), writes dqkv in qkv's layout. Scratch: doutp (B, NH, T, hs),
/// datt (B, NH, T, T), dqkvp (3, B, NH, T, hs).
template <class T>
void attention_backward(Mat<T> dqkv, Vec<T> dqkvp, Vec<T> datt, Vec<T> doutp, CMat<T> dout,
                        CVec<T> qkvp, CVec<T> att, AttentionShape s);

}  // namespace zrt::nn
