#include "tensor_io.hpp"

#include <Kokkos_Core.hpp>

#include <cstring>
#include <stdexcept>
#include <string>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace zrt::nn::model {

namespace {
void copy(float *dst, const float *src, int64_t n) {
  if (n == 0 || dst == src) return;
#if defined(KOKKOS_ENABLE_CUDA)
  // After the model's kernels (on Kokkos' stream), before the program reads.
  Kokkos::fence();
  const cudaError_t rc =
      cudaMemcpy(dst, src, static_cast<size_t>(n) * sizeof(float), cudaMemcpyDefault);
  if (rc != cudaSuccess)
    throw std::runtime_error(std::string("copying a tensor: ") + cudaGetErrorString(rc));
#else
  Kokkos::fence();
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
#endif
}
}  // namespace

void copy_in(float *dst, const float *src, int64_t n) {
  copy(dst, src, n);
}
void copy_out(float *dst, const float *src, int64_t n) {
  copy(dst, src, n);
}
void copy_to_host(float *dst, const float *src, int64_t n) {
  copy(dst, src, n);
}

}  // namespace zrt::nn::model
