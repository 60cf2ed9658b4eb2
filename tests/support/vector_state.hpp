// Whether the upper halves of the vector registers hold data, for tests that check a
// kernel leaves them clean: SSE code after a kernel that leaves them dirty (most of a
// program) runs several times slower.
#pragma once

#include <cpuid.h>

#include <optional>

namespace testutil {

// XINUSE, read with xgetbv 1: bit 2 for ymm, bit 6 for zmm0-15; nothing when this CPU
// cannot say.
inline std::optional<bool> upper_vector_state_dirty() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(0xd, 1, &eax, &ebx, &ecx, &edx) || !(eax & 4)) return std::nullopt;
  unsigned lo = 0, hi = 0;
  asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
  return (lo & 0x44) != 0;
}

}  // namespace testutil
