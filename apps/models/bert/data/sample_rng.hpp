// The random numbers of BERT's data: a small generator whose every output is fixed by its
// key on every platform and standard library. std::mt19937_64 would be, but its
// distributions (uniform_int_distribution, shuffle) are not: libstdc++ and libc++ draw
// differently, so the bounded draws and the shuffle are written here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

namespace bert {

/// xoshiro256** (Blackman and Vigna), its state filled by splitmix64 from one 64-bit seed.
/// Local; one generator per thread.
class SampleRng {
 public:
  /// The generator of @p seed (splitmix64 fills the state).
  explicit SampleRng(uint64_t seed);

  /// A generator keyed by four words (for example seed, stream, epoch, example index),
  /// hashed with XXH3-64 over their little-endian bytes: counter-based, so any example's
  /// numbers can be made without the ones before it.
  static SampleRng keyed(uint64_t a, uint64_t b, uint64_t c, uint64_t d);

  /// The next 64 random bits.
  uint64_t next();
  /// Uniform in [0, n), n > 0, without bias (Lemire's multiply-and-reject).
  uint64_t below(uint64_t n);
  /// Uniform in [lo, hi], both included (Python's random.randint).
  int64_t between(int64_t lo, int64_t hi);
  /// Uniform in [0, 1) with 53 random bits (Python's random.random).
  double uniform();

  /// Fisher-Yates shuffle of @p items with below().
  template <typename T>
  void shuffle(std::span<T> items) {
    for (size_t i = items.size(); i > 1; --i)
      std::swap(items[i - 1], items[below(i)]);
  }

 private:
  uint64_t s_[4];
};

}  // namespace bert
