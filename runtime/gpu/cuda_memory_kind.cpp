#include <cuda_runtime_api.h>

#include "runtime/gpu/emulated_ranges.hpp"
#include "runtime/gpu/memory_kind.hpp"

namespace zrt {

const char *memory_kind_name(MemoryKind kind) {
  return kind == MemoryKind::Device ? "device memory" : "host memory";
}

MemoryKind memory_kind(const void *pointer) noexcept {
  if (in_emulated_device_range(pointer)) return MemoryKind::Device;
  // Without a usable device every pointer is a host pointer; asking the runtime each time
  // would only repeat its "no driver" error (and leave it sticky).
  static const bool have_device = [] {
    int count = 0;
    bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
    cudaGetLastError();
    return ok;
  }();
  if (!have_device || pointer == nullptr) return MemoryKind::Host;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError();  // an unregistered host pointer on older runtimes
    return MemoryKind::Host;
  }
  // Managed memory is reachable from the CPU, so host backends may serve it.
  return attributes.type == cudaMemoryTypeDevice ? MemoryKind::Device : MemoryKind::Host;
}

}  // namespace zrt
