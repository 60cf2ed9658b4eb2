// exp for the layers' float hot loops (the softmax over the vocabulary, GELU's tanh) that the
// compiler can vectorize. glibc's expf is a call per element, and a loop with a call in it
// stays scalar: over GPT-2's 50257 logits it was 1.8% of a training step on 2 ranks (perf,
// 2026-12-04). This is Cephes' expf without branches: the argument clamped to where the
// result is a finite normal float, n = round(x / ln 2) by adding 1.5 * 2^23 (n is then the
// low bits of the sum), x - n ln 2 in two parts (Cody-Waite), a degree-6 polynomial, and
// 2^n put in the exponent bits; within 1 ulp of exp in double over [-87.3, 88.3] (measured,
// the layers test). Below that range it returns just above the smallest normal float
// (1.2e-38: never a subnormal, which is slow), above it 2.4e38 (never inf); NaN stays
// NaN. Every caller either zeroes the tiny terms itself or adds them to at least 1, and
// none passes more than 18. Double goes to the library.
//
// The loops that call it vectorize only where the compiler may if-convert float compares and
// version loops for aliasing: zrt_nn builds with -fno-trapping-math and
// -fvect-cost-model=dynamic under GCC (nn/CMakeLists.txt). Neither changes a result:
// no operation is reordered, only executed several lanes at a time.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tensor.hpp"

namespace zrt::nn {

/// The bits of @p from as a @p To (std::bit_cast, which device code cannot call).
template <class To, class From>
KOKKOS_INLINE_FUNCTION To bits_as(const From &from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

template <class T>
KOKKOS_INLINE_FUNCTION T fast_exp(T x) {
  if constexpr (std::is_same_v<T, float>) {
    // -87.33654 is the float just above -126 ln 2: n = -126 and the polynomial above 1.
    x = x > 88.3762626647949f ? 88.3762626647949f : x;
    x = x < -87.33654022216797f ? -87.33654022216797f : x;
    const float round = 12582912.0f;  // 1.5 * 2^23: its bits are 0x4B400000
    const float shifted = x * 1.44269504088896341f + round;
    const float n = shifted - round;
    x = x - n * 0.693359375f;     // ln 2's upper bits: n * this is exact
    x = x - n * -2.12194440e-4f;  // and the rest
    float p = 1.9875691500e-4f;
    p = p * x + 1.3981999507e-3f;
    p = p * x + 8.3334519073e-3f;
    p = p * x + 4.1665795894e-2f;
    p = p * x + 1.6666665459e-1f;
    p = p * x + 5.0000001201e-1f;
    p = p * (x * x) + x + 1.0f;
    // n + 127 from the sum's bits, in unsigned arithmetic: defined even for NaN, whose p is
    // NaN anyway.
    const uint32_t biased = bits_as<uint32_t>(shifted) - 0x4B400000u + 127u;
    return p * bits_as<float>(biased << 23);
  } else {
    return kmath::exp(x);
  }
}

}  // namespace zrt::nn
