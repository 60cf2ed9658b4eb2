// A build without CUDA has no GPU kernels (the emulated device's are the CPU's).
#include "optim/kernels/device_kernels.hpp"

namespace zrt {

std::unique_ptr<DeviceKernels> make_cuda_kernels(int, std::string *why) {
  if (why != nullptr) *why = "this build of zerort has no CUDA support";
  return nullptr;
}

}  // namespace zrt
