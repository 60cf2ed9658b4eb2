// How the tests read and write the context's device memory, as a program's own kernels or
// copies would: a plain copy on the emulated device (its memory is host memory), cudaMemcpy
// on a GPU. Blocking; either side may be host or device memory.
#pragma once

#include <cstddef>

namespace test {

// Whether the context's device is a GPU (not the emulated device, nor none).
bool device_is_gpu();

void device_copy(void *dst, const void *src, size_t bytes);
void device_memset(void *dst, int value, size_t bytes);

}  // namespace test
