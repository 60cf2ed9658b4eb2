// Vector operations for the kernel template (kernel_body.hpp), one struct per ISA. Each
// compiles only in the translation unit built with that ISA's flags.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "comm/dtype.hpp"

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace zrt::simd {

struct Scalar {
  using V = float;
  static constexpr size_t W = 1;
  static V load(const float *p) { return *p; }
  static void store(float *p, V v) { *p = v; }
  static V set1(float x) { return x; }
  static V add(V a, V b) { return a + b; }
  static V mul(V a, V b) { return a * b; }
  static V div(V a, V b) { return a / b; }
  static V sqrt(V a) { return std::sqrt(a); }
  static V fma(V a, V b, V c) { return std::fma(a, b, c); }  // a * b + c, one rounding
  static V load_bf16(const uint16_t *p) { return bf16_to_float(*p); }
  static V load_fp16(const uint16_t *p) { return fp16_to_float(*p); }
  static void store_bf16(uint16_t *p, V v) { *p = float_to_bf16(v); }
  static void store_fp16(uint16_t *p, V v) { *p = float_to_fp16(v); }
  static bool any_non_finite(V v) { return !std::isfinite(v); }
  static double sum_squares(V v) { return static_cast<double>(v) * v; }
};

#if defined(__AVX2__) && defined(__FMA__)
struct Avx2 {
  using V = __m256;
  static constexpr size_t W = 8;
  static V load(const float *p) { return _mm256_loadu_ps(p); }
  static void store(float *p, V v) { _mm256_storeu_ps(p, v); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V sqrt(V a) { return _mm256_sqrt_ps(a); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V load_bf16(const uint16_t *p) {
    __m256i x = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
  }
  static V load_fp16(const uint16_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  }
  static void store_bf16(uint16_t *p, V v) {
    // Round to nearest even; NaN stays a quiet NaN.
    __m256i u = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i rounded = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    __m256i quiet = _mm256_or_si256(u, _mm256_set1_epi32(0x00400000));
    __m256i bits = _mm256_srli_epi32(_mm256_blendv_epi8(rounded, quiet, nan), 16);
    __m128i packed =
        _mm_packus_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256(bits, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(p), packed);
  }
  static void store_fp16(uint16_t *p, V v) {
    _mm_storeu_si128(reinterpret_cast<__m128i *>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static bool any_non_finite(V v) {
    // x - x is NaN exactly for Inf and NaN.
    __m256 d = _mm256_sub_ps(v, v);
    return _mm256_movemask_ps(_mm256_cmp_ps(d, d, _CMP_UNORD_Q)) != 0;
  }
  static double sum_squares(V v) {
    __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    __m256d s = _mm256_fmadd_pd(lo, lo, _mm256_mul_pd(hi, hi));
    __m128d h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
  }
};
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__)
struct Avx512 {
  using V = __m512;
  static constexpr size_t W = 16;
  static V load(const float *p) { return _mm512_loadu_ps(p); }
  static void store(float *p, V v) { _mm512_storeu_ps(p, v); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V sqrt(V a) { return _mm512_sqrt_ps(a); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V load_bf16(const uint16_t *p) {
    __m512i x = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
  }
  static V load_fp16(const uint16_t *p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  }
  static void store_bf16(uint16_t *p, V v) {
    __m512i u = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i rounded = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    __m512i quiet = _mm512_or_si512(u, _mm512_set1_epi32(0x00400000));
    __m512i bits = _mm512_srli_epi32(_mm512_mask_blend_epi32(nan, rounded, quiet), 16);
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), _mm512_cvtepi32_epi16(bits));
  }
  static void store_fp16(uint16_t *p, V v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(p),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static bool any_non_finite(V v) {
    __m512 d = _mm512_sub_ps(v, v);
    return _mm512_cmp_ps_mask(d, d, _CMP_UNORD_Q) != 0;
  }
  static double sum_squares(V v) {
    __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    return _mm512_reduce_add_pd(_mm512_fmadd_pd(lo, lo, _mm512_mul_pd(hi, hi)));
  }
};
#endif

}  // namespace zrt::simd
