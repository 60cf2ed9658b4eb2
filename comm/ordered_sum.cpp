#include "comm/ordered_sum.hpp"

#include <cstdint>
#include <vector>

#include "comm/dtype.hpp"

namespace zrt {

namespace {

// Blocks keep the fp32 accumulators in L1 while every rank's chunk streams through.
constexpr size_t kBlock = 1024;

template <class T, class Acc, class Load, class Store>
void sum_blocks(const T *chunks, size_t stride, int n, size_t length, zrt_op_t op, T *out,
                Load load, Store store) {
  Acc acc[kBlock];
  const Acc divisor = static_cast<Acc>(n);
  for (size_t base = 0; base < length; base += kBlock) {
    const size_t m = std::min(kBlock, length - base);
    const T *c0 = chunks + base;
    for (size_t i = 0; i < m; ++i)
      acc[i] = load(c0[i]);
    for (int r = 1; r < n; ++r) {
      const T *c = chunks + static_cast<size_t>(r) * stride + base;
      for (size_t i = 0; i < m; ++i)
        acc[i] += load(c[i]);
    }
    if (op == ZRT_OP_AVG)
      for (size_t i = 0; i < m; ++i)
        acc[i] /= divisor;
    for (size_t i = 0; i < m; ++i)
      out[base + i] = store(acc[i]);
  }
}

}  // namespace

void ordered_sum(const void *chunks, size_t stride, int n, size_t length, zrt_dtype_t dtype,
                 zrt_op_t op, void *out) {
  switch (dtype) {
    case ZRT_DTYPE_FP32:
      sum_blocks<float, float>(
          static_cast<const float *>(chunks), stride, n, length, op, static_cast<float *>(out),
          [](float x) { return x; }, [](float x) { return x; });
      return;
    case ZRT_DTYPE_FP64:
      sum_blocks<double, double>(
          static_cast<const double *>(chunks), stride, n, length, op, static_cast<double *>(out),
          [](double x) { return x; }, [](double x) { return x; });
      return;
    case ZRT_DTYPE_BF16:
      sum_blocks<uint16_t, float>(static_cast<const uint16_t *>(chunks), stride, n, length, op,
                                  static_cast<uint16_t *>(out), bf16_to_float, float_to_bf16);
      return;
    case ZRT_DTYPE_FP16:
      sum_blocks<uint16_t, float>(static_cast<const uint16_t *>(chunks), stride, n, length, op,
                                  static_cast<uint16_t *>(out), fp16_to_float, float_to_fp16);
      return;
    default:
      break;
  }
  dtype_size(dtype);  // throws the standard message
}

}  // namespace zrt
