// Where the layers' matrix products go: KokkosBlas::gemm on the host, cuBLAS on CUDA.
//
// Why cuBLAS directly on CUDA rather than KokkosBlas with its cuBLAS TPL: KokkosBlas::gemm
// takes no compute type, so it cannot ask for bf16 tensor cores on fp32 data; and building
// KokkosKernels for CUDA (hours on a small machine) would buy nothing the two calls below do
// not. The host keeps KokkosBlas (OpenBLAS), so a host build computes what it always did.
#include <algorithm>
#include <stdexcept>
#include <string>

#include <zerort/nn/matmul.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cublas_v2.h>
#else
#include <KokkosBlas3_gemm.hpp>
#endif

namespace zrt::nn {
namespace {
GemmPrecision g_precision = GemmPrecision::fp32;
}

void set_gemm_precision(GemmPrecision precision) {
  g_precision = precision;
}
GemmPrecision gemm_precision() {
  return g_precision;
}

#if defined(KOKKOS_ENABLE_CUDA)

namespace {

void check(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS: ") + what + ": " + cublasGetStatusString(status));
}

// One handle for the process, on Kokkos' default instance's stream, so that products are
// ordered with the layers' kernels without a fence. Kept until exit on purpose: destroying
// it from a static destructor would run after CUDA's own teardown.
cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t created = nullptr;
    check(cublasCreate(&created), "cannot create a handle");
    check(cublasSetStream(created, ExecSpace().cuda_stream()), "cannot set the stream");
    return created;
  }();
  return h;
}

cublasOperation_t op(const char *trans) {
  return (trans[0] == 'T' || trans[0] == 't') ? CUBLAS_OP_T : CUBLAS_OP_N;
}

template <class T>
struct CublasTypes;
template <>
struct CublasTypes<float> {
  static constexpr cudaDataType_t data = CUDA_R_32F;
  static cublasComputeType_t compute() {
    return g_precision == GemmPrecision::bf16 ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F;
  }
};
template <>
struct CublasTypes<double> {
  static constexpr cudaDataType_t data = CUDA_R_64F;
  static cublasComputeType_t compute() { return CUBLAS_COMPUTE_64F; }
};

// Row-major C (m,n) = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the same memory,
// B first, m and n swapped, each leading dimension a row's stride.
template <class T>
void strided_batched(const char *ta, const char *tb, int m, int n, int k, T alpha, const T *A,
                     int lda, int64_t sa, const T *B, int ldb, int64_t sb, T beta, T *C, int ldc,
                     int64_t sc, int count) {
  if (m == 0 || n == 0 || count == 0) return;
  using Ty = CublasTypes<T>;
  if (count == 1)
    check(cublasGemmEx(handle(), op(tb), op(ta), n, m, k, &alpha, B, Ty::data, std::max(1, ldb), A,
                       Ty::data, std::max(1, lda), &beta, C, Ty::data, std::max(1, ldc),
                       Ty::compute(), CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  else
    check(cublasGemmStridedBatchedEx(handle(), op(tb), op(ta), n, m, k, &alpha, B, Ty::data,
                                     std::max(1, ldb), sb, A, Ty::data, std::max(1, lda), sa, &beta,
                                     C, Ty::data, std::max(1, ldc), sc, count, Ty::compute(),
                                     CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx");
}

}  // namespace

const char *gemm_backend_name() {
  return g_precision == GemmPrecision::bf16 ? "cuBLAS (bf16 tensor cores, fp32 accumulation)"
                                            : "cuBLAS (fp32)";
}

template <class T>
void gemm(const char *trans_a, const char *trans_b, T alpha, CMat<T> A, CMat<T> B, T beta,
          Mat<T> C) {
  const int m = static_cast<int>(C.extent(0)), n = static_cast<int>(C.extent(1));
  const int k = static_cast<int>(op(trans_a) == CUBLAS_OP_N ? A.extent(1) : A.extent(0));
  strided_batched<T>(trans_a, trans_b, m, n, k, alpha, A.data(), static_cast<int>(A.stride(0)), 0,
                     B.data(), static_cast<int>(B.stride(0)), 0, beta, C.data(),
                     static_cast<int>(C.stride(0)), 0, 1);
}

template <class T>
void gemm_strided_batched(const char *trans_a, const char *trans_b, int m, int n, int k, T alpha,
                          const T *A, int64_t stride_a, const T *B, int64_t stride_b, T beta, T *C,
                          int64_t stride_c, int count) {
  const bool na = op(trans_a) == CUBLAS_OP_N, nb = op(trans_b) == CUBLAS_OP_N;
  strided_batched<T>(trans_a, trans_b, m, n, k, alpha, A, na ? k : m, stride_a, B, nb ? n : k,
                     stride_b, beta, C, n, stride_c, count);
}

#else  // the host

const char *gemm_backend_name() {
  return "KokkosBlas::gemm";
}

template <class T>
void gemm(const char *trans_a, const char *trans_b, T alpha, CMat<T> A, CMat<T> B, T beta,
          Mat<T> C) {
  KokkosBlas::gemm(trans_a, trans_b, alpha, A, B, beta, C);
}

template <class T>
void gemm_strided_batched(const char *trans_a, const char *trans_b, int m, int n, int k, T alpha,
                          const T *A, int64_t stride_a, const T *B, int64_t stride_b, T beta, T *C,
                          int64_t stride_c, int count) {
  const bool na = trans_a[0] == 'N' || trans_a[0] == 'n';
  const bool nb = trans_b[0] == 'N' || trans_b[0] == 'n';
  for (int i = 0; i < count; ++i)
    gemm<T>(trans_a, trans_b, alpha, as_mat(A + i * stride_a, na ? m : k, na ? k : m),
            as_mat(B + i * stride_b, nb ? k : n, nb ? n : k), beta, as_mat(C + i * stride_c, m, n));
}

#endif

#define NN_INSTANTIATE(T)                                                                        \
  template void gemm<T>(const char *, const char *, T, CMat<T>, CMat<T>, T, Mat<T>);             \
  template void gemm_strided_batched<T>(const char *, const char *, int, int, int, T, const T *, \
                                        int64_t, const T *, int64_t, T, T *, int64_t, int);
NN_INSTANTIATE(float)
NN_INSTANTIATE(double)
#undef NN_INSTANTIATE

}  // namespace zrt::nn
