// AVX2 + FMA + F16C kernels (compiled with those flags only in this file).
#include "optim/kernels/kernel_body.hpp"

namespace zrt {

const KernelTable &avx2_kernels() {
  static const KernelTable table = kernel_body::make_table<simd::Avx2>("avx2");
  return table;
}

}  // namespace zrt
