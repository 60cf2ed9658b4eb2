// LayerNorm over the channels of each position (GPT-2 uses it pre-attention, pre-MLP and
// before the LM head; BERT after each residual sum, post-LN, with eps 1e-12).
#pragma once

#include "tensor.hpp"

namespace zrt::nn {

/// out (N, C) = (inp - mean) * rstd * weight (C) + bias (C), per row of inp (N, C);
/// mean (N) and rstd (N) = 1/sqrt(var + eps) are kept for backward (var is the biased
/// variance, as PyTorch's LayerNorm).
template <class T>
void layernorm_forward(Mat<T> out, Vec<T> mean, Vec<T> rstd, CMat<T> inp, CVec<T> weight,
                       CVec<T> bias, T eps = T(1e-5));

/// Given dout (N, C):
///   dinp    (N, C) = beta_dinp * dinp + d(loss)/d(inp)
///   dweight (C)    = beta_param * dweight + sum_n dout * norm
///   dbias   (C)    = beta_param * dbias + sum_n dout
template <class T>
void layernorm_backward(Mat<T> dinp, Vec<T> dweight, Vec<T> dbias, CMat<T> dout, CMat<T> inp,
                        CVec<T> weight, CVec<T> mean, CVec<T> rstd, T beta_dinp, T beta_param);

}  // namespace zrt::nn
