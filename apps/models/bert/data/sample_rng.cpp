#include "data/sample_rng.hpp"

#include <xxhash.h>

namespace bert {
namespace {

uint64_t splitmix64(uint64_t &x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

}  // namespace

SampleRng::SampleRng(uint64_t seed) {
  for (uint64_t &s : s_)
    s = splitmix64(seed);
}

SampleRng SampleRng::keyed(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  unsigned char bytes[32];
  const uint64_t words[4] = {a, b, c, d};
  for (int w = 0; w < 4; ++w)
    for (int i = 0; i < 8; ++i)
      bytes[w * 8 + i] = static_cast<unsigned char>(words[w] >> (8 * i));
  return SampleRng(XXH3_64bits(bytes, sizeof(bytes)));
}

uint64_t SampleRng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

uint64_t SampleRng::below(uint64_t n) {
  __extension__ using u128 = unsigned __int128;
  u128 m = static_cast<u128>(next()) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    while (low < threshold) {
      m = static_cast<u128>(next()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

int64_t SampleRng::between(int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo) + 1));
}

double SampleRng::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

}  // namespace bert
