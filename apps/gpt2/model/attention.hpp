// Causal multi-head self-attention (the part between attn.qkv and attn.proj):
//   q, k, v = split(qkv) by head;  att = softmax(q k^T / sqrt(hs), causal);  y = att v.
// Queries, keys and values are first permuted to (3, B, NH, T, hs) so that each head's
// products are plain contiguous matrices for gemm (what llm.c's CUDA version does too).
#pragma once

#include "tensor.hpp"

namespace gpt2 {

struct AttentionShape {
  int B, T, NH, hs;  // batch, sequence, heads, head size (C = NH * hs)
};

/// Given qkv (B*T, 3C):
///   qkvp (3, B, NH, T, hs)  queries, keys, values by head (kept for backward)
///   att  (B, NH, T, T)      causal softmax of the scores (kept for backward)
///   yp   (B, NH, T, hs)     scratch
///   out  (B*T, C)           the heads' outputs side by side
template <class T>
void attention_forward(Mat<T> out, Vec<T> qkvp, Vec<T> att, Vec<T> yp, CMat<T> qkv,
                       AttentionShape s);

/// Given dout (B*T, C), writes dqkv (B*T, 3C). Scratch: doutp (B, NH, T, hs),
/// datt (B, NH, T, T), dqkvp (3, B, NH, T, hs).
template <class T>
void attention_backward(Mat<T> dqkv, Vec<T> dqkvp, Vec<T> datt, Vec<T> doutp, CMat<T> dout,
                        CVec<T> qkvp, CVec<T> att, AttentionShape s);

}  // namespace gpt2
