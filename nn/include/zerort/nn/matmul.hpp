// The linear layer, and the one place that calls BLAS: every matrix product of the model
// goes through gemm() here. On the host that is KokkosBlas::gemm (OpenBLAS). In a Kokkos
// CUDA build it is cuBLAS, called directly on Kokkos' stream (KokkosKernels is not needed
// there): fp32 products in fp32, or with GemmPrecision::bf16 on the tensor cores with bf16
// inputs and fp32 accumulation (CUBLAS_COMPUTE_32F_FAST_16BF), the model's memory staying
// fp32.
#pragma once

#include "tensor.hpp"

namespace zrt::nn {

/// How float products are computed where the backend can choose (cuBLAS): fp32 throughout,
/// or bf16 inputs on tensor cores with fp32 accumulation. The host's BLAS always computes in
/// fp32, so a host build's results do not depend on this.
enum class GemmPrecision { fp32, bf16 };

/// Sets the precision of every later float product (process-wide; the trainers set it once
/// from --dtype before the first step).
void set_gemm_precision(GemmPrecision precision);
GemmPrecision gemm_precision();

/// The library the products go to and how, for the programs' reports: "KokkosBlas::gemm"
/// on the host, "cuBLAS (fp32)" or "cuBLAS (bf16 tensor cores, fp32 accumulation)" on CUDA.
const char *gemm_backend_name();

/// C (m,n) = alpha * op(A) * op(B) + beta * C, where op is "N" (as is) or "T" (transposed).
/// With beta = 0, C's old contents are never read.
template <class T>
void gemm(const char *trans_a, const char *trans_b, T alpha, CMat<T> A, CMat<T> B, T beta,
          Mat<T> C);

/// The same product for @p count matrices at once: matrix i of A, B and C starts
/// stride_a/b/c elements after matrix i-1 (each row-major, (m,k), (k,n) or their transposes,
/// and (m,n)). On the host, one gemm after another in order (the bits of a loop of gemm());
/// on CUDA, one strided-batched cuBLAS call.
template <class T>
void gemm_strided_batched(const char *trans_a, const char *trans_b, int m, int n, int k, T alpha,
                          const T *A, int64_t stride_a, const T *B, int64_t stride_b, T beta, T *C,
                          int64_t stride_c, int count);

/// out (N, OC) = inp (N, C) . weight (OC, C)^T + bias (OC)
/// bias may be an empty view (no bias).
template <class T>
void matmul_forward(Mat<T> out, CMat<T> inp, CMat<T> weight, CVec<T> bias);

/// Given dout (N, OC), the gradient of out:
///   dinp    (N, C)   = beta_dinp * dinp + dout . weight
///   dweight (OC, C)  = beta_param * dweight + dout^T . inp
///   dbias   (OC)     = beta_param * dbias + sum over rows of dout   (skipped if empty)
/// beta 0 overwrites (first contribution), 1 accumulates. An empty dinp (no rows) skips the
/// input's gradient: a model's first layer needs none.
template <class T>
void matmul_backward(Mat<T> dinp, Mat<T> dweight, Vec<T> dbias, CMat<T> dout, CMat<T> inp,
                     CMat<T> weight, T beta_dinp, T beta_param);

}  // namespace zrt::nn
