// Portable kernels: any x86-64 or other CPU; the fallback when AVX2 is missing.
#include "optim/kernels/kernel_body.hpp"

namespace zrt {

const KernelTable &scalar_kernels() {
  static const KernelTable table = kernel_body::make_table<simd::Scalar>("scalar");
  return table;
}

}  // namespace zrt
