#include "runtime/gpu/cuda_runtime_devices.hpp"

namespace zrt {

CudaRuntimeInfo query_cuda_runtime() noexcept {
  CudaRuntimeInfo info;
  info.status = "this build of zerort has no CUDA support";
  return info;
}

}  // namespace zrt
