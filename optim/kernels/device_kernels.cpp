#include "optim/kernels/device_kernels.hpp"

#include <string>

#include "runtime/error.hpp"

namespace zrt {

std::unique_ptr<DeviceKernels> make_device_kernels(Device &device, const KernelTable &cpu) {
  if (std::string(device.kind()) == "emulated") return make_emulated_kernels(cpu);
  std::string why;
  std::unique_ptr<DeviceKernels> k = make_cuda_kernels(device.index(), &why);
  if (!k) fail(ZRT_ERR_NOT_SUPPORTED, "no optimizer kernels for {}: {}", device.describe(), why);
  return k;
}

}  // namespace zrt
