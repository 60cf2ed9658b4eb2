#include "runtime/gpu/emulated_ranges.hpp"
#include "runtime/gpu/memory_kind.hpp"

namespace zrt {

const char *memory_kind_name(MemoryKind kind) {
  return kind == MemoryKind::Device ? "device memory" : "host memory";
}

MemoryKind memory_kind(const void *pointer) noexcept {
  // A build without CUDA sees no other device than the emulated one.
  return in_emulated_device_range(pointer) ? MemoryKind::Device : MemoryKind::Host;
}

}  // namespace zrt
