// The address ranges of the emulated device (memory.device.emulate, memory/emulated/):
// memory_kind() reports addresses in them as device memory, so the registry, the
// backends and the engine treat the emulated arena exactly as they treat cudaMalloc
// memory. Thread-safe; lookups take a shared lock.
#pragma once

#include <cstddef>

namespace zrt {

void add_emulated_device_range(const void *base, size_t bytes) noexcept;
void remove_emulated_device_range(const void *base) noexcept;
bool in_emulated_device_range(const void *pointer) noexcept;

}  // namespace zrt
