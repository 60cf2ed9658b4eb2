// The linear layer, and the one place that calls BLAS: every matrix product of the model
// goes through gemm() here, that is KokkosBlas::gemm (OpenBLAS on the host, cuBLAS in a
// Kokkos CUDA build).
#pragma once

#include "tensor.hpp"

namespace nn {

/// C (m,n) = alpha * op(A) * op(B) + beta * C, where op is "N" (as is) or "T" (transposed).
/// With beta = 0, C's old contents are never read.
template <class T>
void gemm(const char *trans_a, const char *trans_b, T alpha, CMat<T> A, CMat<T> B, T beta,
          Mat<T> C);

/// out (N, OC) = inp (N, C) . weight (OC, C)^T + bias (OC)
/// bias may be an empty view (no bias).
template <class T>
void matmul_forward(Mat<T> out, CMat<T> inp, CMat<T> weight, CVec<T> bias);

/// Given dout (N, OC), the gradient of out:
///   dinp    (N, C)   = beta_dinp * dinp + dout . weight
///   dweight (OC, C)  = beta_param * dweight + dout^T . inp
///   dbias   (OC)     = beta_param * dbias + sum over rows of dout   (skipped if empty)
/// beta 0 overwrites (first contribution), 1 accumulates.
template <class T>
void matmul_backward(Mat<T> dinp, Mat<T> dweight, Vec<T> dbias, CMat<T> dout, CMat<T> inp,
                     CMat<T> weight, T beta_dinp, T beta_param);

}  // namespace nn
