#include "runtime/gpu/cuda_runtime_devices.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cctype>

namespace zrt {

CudaRuntimeInfo query_cuda_runtime() noexcept {
  CudaRuntimeInfo info;
  info.compiled = true;
  try {
    cudaRuntimeGetVersion(&info.runtime_version);
    cudaDriverGetVersion(&info.driver_version);
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      info.status = cudaGetErrorString(err);
      cudaGetLastError();  // clear the sticky error so later CUDA users start clean
      return info;
    }
    info.status = "ok";
    for (int i = 0; i < count; ++i) {
      CudaRuntimeDevice d;
      d.index = i;
      cudaDeviceProp prop{};
      if (cudaGetDeviceProperties(&prop, i) == cudaSuccess) {
        d.name = prop.name;
        d.memory_bytes = prop.totalGlobalMem;
      }
      char bus[32] = {0};
      if (cudaDeviceGetPCIBusId(bus, sizeof bus, i) == cudaSuccess) {
        d.pci_bus_id = bus;
        std::transform(d.pci_bus_id.begin(), d.pci_bus_id.end(), d.pci_bus_id.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      }
      info.devices.push_back(std::move(d));
    }
  } catch (...) {
    info.status = "out of memory while listing CUDA devices";
  }
  return info;
}

}  // namespace zrt
