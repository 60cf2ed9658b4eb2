// The serial reference of the collective tests: every rank's seeded random input, exactly
// representable in each dtype, and the expected results with their error bounds. Written
// independently of zerort's own conversions.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <zerort/zerort.h>

namespace test {

inline size_t esize(zrt_dtype_t dt) {
  return dt == ZRT_DTYPE_FP64 ? 8 : dt == ZRT_DTYPE_FP32 ? 4 : 2;
}

// Unit roundoff of each dtype.
inline double unit_roundoff(zrt_dtype_t dt) {
  switch (dt) {
    case ZRT_DTYPE_FP32:
      return std::ldexp(1.0, -24);
    case ZRT_DTYPE_FP64:
      return std::ldexp(1.0, -53);
    case ZRT_DTYPE_BF16:
      return std::ldexp(1.0, -8);
    case ZRT_DTYPE_FP16:
      return std::ldexp(1.0, -11);
    default:
      break;
  }
  return 1;
}

// Encodes v, which the generator made exactly representable, and decodes stored values.
// Written independently of zerort's own conversions.
inline void put(void *buf, size_t i, zrt_dtype_t dt, double v) {
  switch (dt) {
    case ZRT_DTYPE_FP32:
      static_cast<float *>(buf)[i] = static_cast<float>(v);
      break;
    case ZRT_DTYPE_FP64:
      static_cast<double *>(buf)[i] = v;
      break;
    case ZRT_DTYPE_BF16:
      static_cast<uint16_t *>(buf)[i] =
          static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(v)) >> 16);
      break;
    case ZRT_DTYPE_FP16:
      static_cast<uint16_t *>(buf)[i] = std::bit_cast<uint16_t>(static_cast<_Float16>(v));
      break;
    default:
      break;
  }
}
inline double get(const void *buf, size_t i, zrt_dtype_t dt) {
  switch (dt) {
    case ZRT_DTYPE_FP32:
      return static_cast<const float *>(buf)[i];
    case ZRT_DTYPE_FP64:
      return static_cast<const double *>(buf)[i];
    case ZRT_DTYPE_BF16:
      return std::bit_cast<float>(uint32_t{static_cast<const uint16_t *>(buf)[i]} << 16);
    case ZRT_DTYPE_FP16:
      return static_cast<double>(std::bit_cast<_Float16>(static_cast<const uint16_t *>(buf)[i]));
    default:
      break;
  }
  return 0;
}

// Rank r's element i of case `salt`, exactly representable in dt, in [-1, 1).
inline double input(int r, size_t i, int salt, zrt_dtype_t dt) {
  // splitmix64 of (salt, rank, index): cheap enough for millions of reference elements.
  uint64_t x = (static_cast<uint64_t>(salt) << 32) ^ (static_cast<uint64_t>(r) << 52) ^ i;
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  double v = std::ldexp(static_cast<double>(x >> 11), -52) - 1.0;
  switch (dt) {
    case ZRT_DTYPE_FP32:
      return static_cast<float>(v);
    case ZRT_DTYPE_FP64:
      return v;
    case ZRT_DTYPE_BF16:
      return std::bit_cast<float>(std::bit_cast<uint32_t>(static_cast<float>(v)) & 0xffff0000u);
    case ZRT_DTYPE_FP16:
      return static_cast<double>(static_cast<_Float16>(v));
    default:
      break;
  }
  return 0;
}

struct Expect {
  double value;
  double tolerance;
};

inline Expect reference(size_t i, int salt, zrt_dtype_t dt, zrt_op_t op, int n) {
  double sum = 0, mag = 0;
  for (int r = 0; r < n; ++r) {
    double x = input(r, i, salt, dt);
    sum += x;
    mag += std::fabs(x);
  }
  // Each of the n-1 additions rounds once in the accumulation precision, and the result
  // rounds once more into dt.
  double u = unit_roundoff(dt), acc = dt == ZRT_DTYPE_FP64 ? u : std::ldexp(1.0, -24);
  double tol = n * acc * mag + u * std::fabs(sum) + 1e-300;
  if (dt == ZRT_DTYPE_BF16 || dt == ZRT_DTYPE_FP16) tol = n * u * mag + u * std::fabs(sum);
  if (op == ZRT_OP_AVG) return {sum / n, tol / n + u * std::fabs(sum / n)};
  return {sum, tol};
}

inline const char *name(zrt_dtype_t dt) {
  const char *names[] = {"fp32", "fp64", "bf16", "fp16"};
  return names[dt];
}

inline const zrt_dtype_t kDtypes[] = {ZRT_DTYPE_FP32, ZRT_DTYPE_FP64, ZRT_DTYPE_BF16,
                                      ZRT_DTYPE_FP16};

// One element, sizes n does not divide, and a few megabytes (several pipeline steps of
// every backend).
inline std::vector<size_t> counts(int ranks) {
  size_t n = static_cast<size_t>(ranks);
  return {1, 2, 3, n + 1, 2 * n - 1, 1000, 4099, 65537, (size_t{1} << 20) + 7};
}

// Compares count elements and reports the first mismatch.
inline std::string compare(const void *got, size_t count, zrt_dtype_t dt,
                           const std::function<Expect(size_t)> &want) {
  for (size_t i = 0; i < count; ++i) {
    Expect e = want(i);
    double g = get(got, i, dt);
    if (!(std::fabs(g - e.value) <= e.tolerance))
      return fmt::format("element {}: got {} want {} (tolerance {})", i, g, e.value, e.tolerance);
  }
  return "";
}

// The deterministic reference: contributions added in rank order in the accumulation
// precision, divided for avg, rounded once into dt.
inline double ordered_reference(size_t i, int salt, zrt_dtype_t dt, zrt_op_t op, int n) {
  if (dt == ZRT_DTYPE_FP64) {
    double acc = input(0, i, salt, dt);
    for (int r = 1; r < n; ++r)
      acc += input(r, i, salt, dt);
    return op == ZRT_OP_AVG ? acc / n : acc;
  }
  float acc = static_cast<float>(input(0, i, salt, dt));
  for (int r = 1; r < n; ++r)
    acc += static_cast<float>(input(r, i, salt, dt));
  if (op == ZRT_OP_AVG) acc /= static_cast<float>(n);
  // On the stack: this runs for every element of megabyte buffers, and a heap allocation
  // each time made the np 4 suite run for minutes under AddressSanitizer.
  alignas(8) char one[8] = {};
  if (dt == ZRT_DTYPE_BF16) {
    // Round to nearest even, written out here independently of zerort.
    uint32_t u = std::bit_cast<uint32_t>(acc);
    u += 0x7fffu + ((u >> 16) & 1u);
    return std::bit_cast<float>(u & 0xffff0000u);
  }
  put(one, 0, dt, acc);
  return get(one, 0, dt);
}

}  // namespace test
