// exp for the layers' float hot loops (the softmax over the vocabulary, GELU's tanh) that the
// compiler can vectorize. glibc's expf is a call per element, and a loop with a call in it
// stays scalar: over GPT-2's 50257 logits it was 1.8% of a training step on 2 ranks (perf,
// 2026-12-04). This is Cephes' expf without branches: the argument clamped to where the
// result is a normal float, n = round(x / ln 2) by the 1.5 * 2^23 trick, x - n ln 2 in two
// parts (Cody-Waite), a degree-6 polynomial, and 2^n put in the exponent bits; within 1 ulp
// of exp in double over [-87, 88] (measured, the layers test). Below -87.33 it returns about the
// smallest normal float (2^-126), not 0: every caller either zeroes such terms itself or
// adds them to at least 1. Double goes to the library.
//
// The loops that call it vectorize only where the compiler may if-convert float compares and
// version loops for aliasing: zrt_nn builds with -fno-trapping-math and
// -fvect-cost-model=dynamic under GCC (apps/nn/CMakeLists.txt). Neither changes a result:
// no operation is reordered, only executed several lanes at a time.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#include "tensor.hpp"

namespace nn {

template <class T>
KOKKOS_INLINE_FUNCTION T fast_exp(T x) {
  if constexpr (std::is_same_v<T, float>) {
    x = x > 88.3762626647949f ? 88.3762626647949f : x;
    x = x < -87.3365478515625f ? -87.3365478515625f : x;
    const float round = 12582912.0f;  // 1.5 * 2^23: adding and subtracting it rounds
    const float n = (x * 1.44269504088896341f + round) - round;
    x = x - n * 0.693359375f;     // ln 2's upper bits: n * this is exact
    x = x - n * -2.12194440e-4f;  // and the rest
    float p = 1.9875691500e-4f;
    p = p * x + 1.3981999507e-3f;
    p = p * x + 8.3334519073e-3f;
    p = p * x + 4.1665795894e-2f;
    p = p * x + 1.6666665459e-1f;
    p = p * x + 5.0000001201e-1f;
    p = p * (x * x) + x + 1.0f;
    const uint32_t two_n = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
    return p * std::bit_cast<float>(two_n);
  } else {
    return kmath::exp(x);
  }
}

}  // namespace nn
