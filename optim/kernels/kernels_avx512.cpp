// AVX-512 (F + BW) kernels (compiled with those flags only in this file).
#include "optim/kernels/kernel_body.hpp"

namespace zrt {

const KernelTable &avx512_kernels() {
  static const KernelTable table = kernel_body::make_table<simd::Avx512>("avx512");
  return table;
}

}  // namespace zrt
