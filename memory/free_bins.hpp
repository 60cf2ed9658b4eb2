// The free blocks of a pool, in size classes (the two-level segregated lists of TLSF):
// sizes below 32 units of alignment have a class each, larger ones 32 classes per power
// of two. A bitmap finds the first non-empty class that can hold a request in constant
// time; scanning that class for the smallest block gives the best fit, because every
// block of a higher class is larger than every block of a lower one.
//
// Ties between equal sizes are broken by address, towards the lifetime's end of the
// pool (lowest address for long-lived, highest for transient), so each lifetime keeps to
// its own end even when it reuses holes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "memory/pool_block.hpp"

namespace zrt {

class FreeBins {
 public:
  // unit_shift: log2 of the pool's alignment; sizes are multiples of it.
  explicit FreeBins(unsigned unit_shift) : shift_(unit_shift) {}

  void insert(Block *b);
  void remove(Block *b);
  // The smallest free block of at least `size` bytes (best fit), or nullptr.
  Block *best_fit(size_t size, Lifetime lifetime) const;
  // The largest free block, or nullptr.
  Block *largest() const;
  size_t count() const { return count_; }
  bool contains(const Block *b) const;  // for consistency checks

  // Candidates examined per class, which bounds the time of one search; past it the
  // best of those seen is taken. Classes rarely hold this many blocks.
  static constexpr int kScanLimit = 256;

 private:
  static constexpr unsigned kExact = 32;  // classes of exact sizes below this many units
  static constexpr unsigned kSub = 32;    // classes per power of two above
  static constexpr unsigned kBins = kExact + 64 * kSub;
  static constexpr unsigned kWords = (kBins + 63) / 64;  // <= 64: one summary word

  unsigned bin_of(size_t size) const;
  int next_nonempty(unsigned from) const;  // first non-empty bin >= from, -1 if none
  Block *scan(unsigned bin, size_t size, Lifetime lifetime) const;

  unsigned shift_;
  size_t count_ = 0;
  std::array<Block *, kBins> heads_{};
  std::array<uint64_t, kWords> words_{};
  uint64_t summary_ = 0;  // bit w: words_[w] != 0
};

}  // namespace zrt
