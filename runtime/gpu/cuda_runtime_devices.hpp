// The GPUs the CUDA runtime sees, for matching against hwloc's PCI devices. The build
// compiles cuda_runtime_devices.cpp when a CUDA toolkit is found and
// no_cuda_runtime_devices.cpp otherwise; nothing else in zerort needs to know which.
#pragma once

#include <string>
#include <vector>

namespace zrt {

struct CudaRuntimeDevice {
  int index = -1;
  std::string name;
  std::string pci_bus_id;  // "0000:3b:00.0", lower case
  size_t memory_bytes = 0;
};

struct CudaRuntimeInfo {
  bool compiled = false;    // this build has the CUDA paths
  int runtime_version = 0;  // e.g. 13000
  int driver_version = 0;   // 0 when there is no driver
  std::string status;       // "ok" or why no device is usable ("no CUDA driver")
  std::vector<CudaRuntimeDevice> devices;
};

// Never throws and never aborts, with or without a driver.
CudaRuntimeInfo query_cuda_runtime() noexcept;

}  // namespace zrt
