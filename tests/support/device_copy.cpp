#include "device_copy.hpp"

#include <gtest/gtest.h>
#include <zerort/zerort.h>

#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "mpi_fixture.hpp"

#if ZRT_TEST_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace test {

bool device_is_gpu() {
  static const bool gpu = [] {
    size_t n = 0;
    zrt_context_describe(context(), nullptr, 0, &n);
    std::string text(n + 1, '\0');
    zrt_context_describe(context(), text.data(), text.size(), &n);
    text.resize(n);
    const nlohmann::json d = nlohmann::json::parse(text, nullptr, false);
    return d.is_object() && d["memory"]["device"].is_object() &&
           d["memory"]["device"].value("kind", "") == "cuda";
  }();
  return gpu;
}

void device_copy(void *dst, const void *src, size_t bytes) {
#if ZRT_TEST_HAVE_CUDA
  if (device_is_gpu()) {
    const cudaError_t err = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
    ASSERT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
    return;
  }
#endif
  std::memcpy(dst, src, bytes);
}

void device_memset(void *dst, int value, size_t bytes) {
#if ZRT_TEST_HAVE_CUDA
  if (device_is_gpu()) {
    const cudaError_t err = cudaMemset(dst, value, bytes);
    ASSERT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
    return;
  }
#endif
  std::memset(dst, value, bytes);
}

}  // namespace test
