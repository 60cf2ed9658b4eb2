#include <cstring>

#include "optim/kernels/kernels.hpp"
#include "runtime/error.hpp"

namespace zrt {

bool cpu_has_avx2() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c");
}

bool cpu_has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}

const KernelTable &select_kernels(const char *isa) {
  if (std::strcmp(isa, "scalar") == 0) return scalar_kernels();
  if (std::strcmp(isa, "avx2") == 0) {
    if (!cpu_has_avx2())
      fail(ZRT_ERR_NOT_SUPPORTED, "kernels.isa is avx2 but this CPU lacks AVX2/FMA/F16C");
    return avx2_kernels();
  }
  if (std::strcmp(isa, "avx512") == 0) {
    if (!cpu_has_avx512())
      fail(ZRT_ERR_NOT_SUPPORTED, "kernels.isa is avx512 but this CPU lacks AVX-512F/BW");
    return avx512_kernels();
  }
  if (std::strcmp(isa, "auto") != 0)
    fail(ZRT_ERR_INVALID_ARGUMENT,
         "kernel ISA '{}': accepted values are auto, avx512, avx2, scalar", isa);
  if (cpu_has_avx512()) return avx512_kernels();
  if (cpu_has_avx2()) return avx2_kernels();
  return scalar_kernels();
}

}  // namespace zrt
