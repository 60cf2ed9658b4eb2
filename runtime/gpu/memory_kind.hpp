// Where a buffer lives: host memory (pageable, pinned or CUDA-managed, which the CPU can
// touch) or device memory (CUDA's, or the emulated device's arena: emulated_ranges.hpp). The
// communication registry chooses backends by it, and a backend refuses memory it cannot serve. The
// build compiles cuda_memory_kind.cpp when it has CUDA and no_cuda_memory_kind.cpp otherwise.
#pragma once

namespace zrt {

enum class MemoryKind { Host, Device };

const char *memory_kind_name(MemoryKind kind);  // "host memory", "device memory"

// Local, thread-safe, never throws. Host when the build has no CUDA or the node no GPU,
// unless the pointer lies in the emulated device.
MemoryKind memory_kind(const void *pointer) noexcept;

}  // namespace zrt
