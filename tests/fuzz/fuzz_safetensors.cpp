// Fuzz target: the safetensors parser must reject any malformed input with an Error, never
// crash or read out of bounds.
#include <cstddef>
#include <cstdint>

#include "safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    safetensors::File f = safetensors::parse(data, size);
    for (const auto &t : f.tensors)
      if (t.dtype == "F32" || t.dtype == "F16" || t.dtype == "BF16" || t.dtype == "F64")
        safetensors::to_float(t, data + f.data_start);
  } catch (const safetensors::Error &) {
  }
  return 0;
}
