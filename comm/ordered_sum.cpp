#include "comm/ordered_sum.hpp"

#include <cpuid.h>

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "comm/dtype.hpp"

namespace zrt {

namespace {

// Sources are passed as an array; more than this many go through the heap.
constexpr int kStackSources = 64;

template <class T, class Acc, class Load, class Store>
void sum_scalar(const void *const *sources, int n, size_t begin, size_t end, zrt_op_t op, void *out,
                Load load, Store store) {
  const Acc divisor = static_cast<Acc>(n);
  auto *o = static_cast<T *>(out);
  for (size_t i = begin; i < end; ++i) {
    Acc acc = load(static_cast<const T *>(sources[0])[i]);
    for (int r = 1; r < n; ++r)
      acc += load(static_cast<const T *>(sources[r])[i]);
    if (op == ZRT_OP_AVG) acc /= divisor;
    o[i] = store(acc);
  }
}

float load_f32(float x) {
  return x;
}
double load_f64(double x) {
  return x;
}

void sum_generic(const void *const *s, int n, size_t begin, size_t end, zrt_dtype_t dtype,
                 zrt_op_t op, void *out) {
  switch (dtype) {
    case ZRT_DTYPE_FP32:
      sum_scalar<float, float>(s, n, begin, end, op, out, load_f32, load_f32);
      return;
    case ZRT_DTYPE_FP64:
      sum_scalar<double, double>(s, n, begin, end, op, out, load_f64, load_f64);
      return;
    case ZRT_DTYPE_BF16:
      sum_scalar<uint16_t, float>(s, n, begin, end, op, out, bf16_to_float, float_to_bf16);
      return;
    case ZRT_DTYPE_FP16:
      sum_scalar<uint16_t, float>(s, n, begin, end, op, out, fp16_to_float, float_to_fp16);
      return;
    default:
      break;
  }
  dtype_size(dtype);  // throws the standard message
}

// --- AVX2 + F16C: 16 elements per iteration (two registers, for two chains in flight) ----

#define ZRT_AVX2 __attribute__((target("avx2,f16c")))

ZRT_AVX2 inline __m256 load8(const float *p) {
  return _mm256_loadu_ps(p);
}
ZRT_AVX2 inline void store8(float *p, __m256 v) {
  _mm256_storeu_ps(p, v);
}

ZRT_AVX2 inline __m256 load8_bf16(const uint16_t *p) {
  __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
// float_to_bf16 of dtype.hpp, eight at a time: round to nearest even, NaNs made quiet.
ZRT_AVX2 inline void store8_bf16(uint16_t *p, __m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i magnitude = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i is_nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7f800000));
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  const __m256i r = _mm256_blendv_epi8(rounded, quiet, is_nan);
  // packus packs within 128-bit lanes; the permute puts the four quarters back in order.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xd8);
  _mm_storeu_si128(reinterpret_cast<__m128i *>(p), _mm256_castsi256_si128(packed));
}

ZRT_AVX2 inline __m256 load8_fp16(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
}
ZRT_AVX2 inline void store8_fp16(uint16_t *p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i *>(p),
                   _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// Loads eight elements of type T as fp32.
template <class T, int Kind>
ZRT_AVX2 inline __m256 load_as_f32(const T *p) {
  if constexpr (Kind == ZRT_DTYPE_FP32)
    return load8(p);
  else if constexpr (Kind == ZRT_DTYPE_BF16)
    return load8_bf16(p);
  else
    return load8_fp16(p);
}
template <class T, int Kind>
ZRT_AVX2 inline void store_from_f32(T *p, __m256 v) {
  if constexpr (Kind == ZRT_DTYPE_FP32)
    store8(p, v);
  else if constexpr (Kind == ZRT_DTYPE_BF16)
    store8_bf16(p, v);
  else
    store8_fp16(p, v);
}

// From element begin; with Stream, fp32 only and out + begin 32-byte aligned, the stores
// stream (streaming_copy.hpp says why).
template <class T, int Kind, bool Stream = false>
ZRT_AVX2 size_t sum_avx2_f32(const void *const *s, int n, size_t begin, size_t length, zrt_op_t op,
                             void *out) {
  auto *o = static_cast<T *>(out);
  const __m256 divisor = _mm256_set1_ps(static_cast<float>(n));
  const bool avg = op == ZRT_OP_AVG;
  size_t i = begin;
  for (; i + 16 <= length; i += 16) {
    const T *s0 = static_cast<const T *>(s[0]) + i;
    __m256 a = load_as_f32<T, Kind>(s0), b = load_as_f32<T, Kind>(s0 + 8);
    for (int r = 1; r < n; ++r) {
      const T *sr = static_cast<const T *>(s[r]) + i;
      a = _mm256_add_ps(a, load_as_f32<T, Kind>(sr));
      b = _mm256_add_ps(b, load_as_f32<T, Kind>(sr + 8));
    }
    if (avg) {
      a = _mm256_div_ps(a, divisor);
      b = _mm256_div_ps(b, divisor);
    }
    if constexpr (Stream) {
      static_assert(Kind == ZRT_DTYPE_FP32);
      _mm256_stream_ps(o + i, a);
      _mm256_stream_ps(o + i + 8, b);
    } else {
      store_from_f32<T, Kind>(o + i, a);
      store_from_f32<T, Kind>(o + i + 8, b);
    }
  }
  return i;
}

ZRT_AVX2 size_t sum_avx2_f64(const void *const *s, int n, size_t length, zrt_op_t op, void *out) {
  auto *o = static_cast<double *>(out);
  const __m256d divisor = _mm256_set1_pd(static_cast<double>(n));
  size_t i = 0;
  for (; i + 8 <= length; i += 8) {
    const double *s0 = static_cast<const double *>(s[0]) + i;
    __m256d a = _mm256_loadu_pd(s0), b = _mm256_loadu_pd(s0 + 4);
    for (int r = 1; r < n; ++r) {
      const double *sr = static_cast<const double *>(s[r]) + i;
      a = _mm256_add_pd(a, _mm256_loadu_pd(sr));
      b = _mm256_add_pd(b, _mm256_loadu_pd(sr + 4));
    }
    if (op == ZRT_OP_AVG) {
      a = _mm256_div_pd(a, divisor);
      b = _mm256_div_pd(b, divisor);
    }
    _mm256_storeu_pd(o + i, a);
    _mm256_storeu_pd(o + i + 4, b);
  }
  return i;
}

// The stack-or-heap array of source pointers, so callers with few sources never allocate.
class Sources {
 public:
  Sources(const void *chunks, size_t stride_bytes, int n) {
    const void **p = stack_;
    if (n > kStackSources) {
      heap_.resize(static_cast<size_t>(n));
      p = heap_.data();
    }
    for (int r = 0; r < n; ++r)
      p[r] = static_cast<const char *>(chunks) + static_cast<size_t>(r) * stride_bytes;
    data_ = p;
  }
  const void *const *data() const { return data_; }

 private:
  const void *stack_[kStackSources];
  std::vector<const void *> heap_;
  const void *const *data_ = nullptr;
};

}  // namespace

namespace detail {

bool cpu_has_avx2() {
  // F16C from CPUID leaf 1 (ECX bit 29): clang before 16 does not know "f16c" in
  // __builtin_cpu_supports, and the fuzz build is clang's.
  static const bool yes = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 29)) != 0;
    return __builtin_cpu_supports("avx2") && f16c;
  }();
  return yes;
}

void ordered_sum_generic(const void *const *sources, int n, size_t length, zrt_dtype_t dtype,
                         zrt_op_t op, void *out) {
  sum_generic(sources, n, 0, length, dtype, op, out);
}

void ordered_sum_avx2(const void *const *sources, int n, size_t length, zrt_dtype_t dtype,
                      zrt_op_t op, void *out, bool stream) {
  size_t done = 0;
  const auto address = reinterpret_cast<uintptr_t>(out);
  switch (dtype) {
    case ZRT_DTYPE_FP32:
      if (stream && address % sizeof(float) == 0) {
        // Up to out's first 32-byte boundary element by element (the same additions), then
        // the vectors with streaming stores, fenced before the caller says it is done.
        const size_t head = std::min(length, (32 - address % 32) % 32 / sizeof(float));
        sum_generic(sources, n, 0, head, dtype, op, out);
        done = sum_avx2_f32<float, ZRT_DTYPE_FP32, true>(sources, n, head, length, op, out);
        _mm_sfence();
      } else {
        done = sum_avx2_f32<float, ZRT_DTYPE_FP32>(sources, n, 0, length, op, out);
      }
      break;
    case ZRT_DTYPE_BF16:
      done = sum_avx2_f32<uint16_t, ZRT_DTYPE_BF16>(sources, n, 0, length, op, out);
      break;
    case ZRT_DTYPE_FP16:
      done = sum_avx2_f32<uint16_t, ZRT_DTYPE_FP16>(sources, n, 0, length, op, out);
      break;
    case ZRT_DTYPE_FP64:
      done = sum_avx2_f64(sources, n, length, op, out);
      break;
    default:
      break;
  }
  // The tail (and any unknown dtype, which the generic path rejects) element by element.
  sum_generic(sources, n, done, length, dtype, op, out);
}

}  // namespace detail

void ordered_sum_sources(const void *const *sources, int n, size_t length, zrt_dtype_t dtype,
                         zrt_op_t op, void *out, bool stream) {
  if (detail::cpu_has_avx2())
    detail::ordered_sum_avx2(sources, n, length, dtype, op, out, stream);
  else
    detail::ordered_sum_generic(sources, n, length, dtype, op, out);
}

void ordered_sum(const void *chunks, size_t stride, int n, size_t length, zrt_dtype_t dtype,
                 zrt_op_t op, void *out) {
  Sources sources(chunks, stride * dtype_size(dtype), n);
  ordered_sum_sources(sources.data(), n, length, dtype, op, out);
}

const char *ordered_sum_isa() {
  return detail::cpu_has_avx2() ? "avx2" : "generic";
}

}  // namespace zrt
