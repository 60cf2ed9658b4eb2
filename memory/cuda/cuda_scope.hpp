// What the CUDA files of the memory layer share: the current-device guard, the check that
// a device is usable, and the failure of a CUDA call as a zerort error. Compiled only in
// builds with CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "runtime/error.hpp"
#include "zerort/status.h"

namespace zrt {

// Makes `device` current for the scope and restores the caller's device after, so
// zerort never changes which GPU the program's own CUDA calls go to.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&saved_) != cudaSuccess) saved_ = -1;
    if (saved_ != device) cudaSetDevice(device);
  }
  ~DeviceScope() {
    if (saved_ >= 0) cudaSetDevice(saved_);
  }
  DeviceScope(const DeviceScope &) = delete;
  DeviceScope &operator=(const DeviceScope &) = delete;

 private:
  int saved_ = -1;
};

// Why `device` cannot be used, or "" when it can. Clears CUDA's sticky error state.
std::string cuda_unusable(int device);

// Throws Error(status, "<call> failed: <CUDA's message>"), clearing the error state.
[[noreturn]] void cuda_fail(zrt_status_t status, const char *call, cudaError_t err);

}  // namespace zrt
