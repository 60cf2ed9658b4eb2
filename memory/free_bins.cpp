#include "memory/free_bins.hpp"

#include <bit>

namespace zrt {

static_assert(FreeBins::kScanLimit > 0);

unsigned FreeBins::bin_of(size_t size) const {
  size_t units = size >> shift_;
  if (units < kExact) return static_cast<unsigned>(units);
  unsigned log = static_cast<unsigned>(std::bit_width(units)) - 1;  // >= 5
  unsigned sub = static_cast<unsigned>((units >> (log - 5)) & (kSub - 1));
  return kExact + (log - 5) * kSub + sub;
}

void FreeBins::insert(Block *b) {
  unsigned bin = bin_of(b->size);
  b->bin = bin;
  b->bin_prev = nullptr;
  b->bin_next = heads_[bin];
  if (heads_[bin] != nullptr) heads_[bin]->bin_prev = b;
  heads_[bin] = b;
  words_[bin / 64] |= uint64_t{1} << (bin % 64);
  summary_ |= uint64_t{1} << (bin / 64);
  ++count_;
}

void FreeBins::remove(Block *b) {
  unsigned bin = b->bin;
  if (b->bin_prev != nullptr)
    b->bin_prev->bin_next = b->bin_next;
  else
    heads_[bin] = b->bin_next;
  if (b->bin_next != nullptr) b->bin_next->bin_prev = b->bin_prev;
  b->bin_prev = b->bin_next = nullptr;
  if (heads_[bin] == nullptr) {
    words_[bin / 64] &= ~(uint64_t{1} << (bin % 64));
    if (words_[bin / 64] == 0) summary_ &= ~(uint64_t{1} << (bin / 64));
  }
  --count_;
}

int FreeBins::next_nonempty(unsigned from) const {
  if (from >= kBins) return -1;
  unsigned w = from / 64;
  uint64_t bits = words_[w] & (~uint64_t{0} << (from % 64));
  if (bits != 0) return static_cast<int>(w * 64 + static_cast<unsigned>(std::countr_zero(bits)));
  if (w + 1 >= kWords) return -1;
  uint64_t words = summary_ & (~uint64_t{0} << (w + 1));
  if (words == 0) return -1;
  unsigned next = static_cast<unsigned>(std::countr_zero(words));
  return static_cast<int>(next * 64 + static_cast<unsigned>(std::countr_zero(words_[next])));
}

Block *FreeBins::scan(unsigned bin, size_t size, Lifetime lifetime) const {
  Block *best = nullptr;
  int seen = 0;
  for (Block *b = heads_[bin]; b != nullptr && seen < kScanLimit; b = b->bin_next, ++seen) {
    if (b->size < size) continue;
    if (best == nullptr || b->size < best->size ||
        (b->size == best->size &&
         (lifetime == Lifetime::Long ? b->addr < best->addr : b->addr > best->addr)))
      best = b;
  }
  return best;
}

Block *FreeBins::best_fit(size_t size, Lifetime lifetime) const {
  unsigned bin = bin_of(size);
  // The request's own class may hold blocks both smaller and larger than it.
  if (heads_[bin] != nullptr) {
    if (Block *b = scan(bin, size, lifetime)) return b;
  }
  int next = next_nonempty(bin + 1);
  return next < 0 ? nullptr : scan(static_cast<unsigned>(next), 0, lifetime);
}

bool FreeBins::contains(const Block *b) const {
  if (b->bin >= kBins) return false;
  for (const Block *x = heads_[b->bin]; x != nullptr; x = x->bin_next)
    if (x == b) return true;
  return false;
}

Block *FreeBins::largest() const {
  if (summary_ == 0) return nullptr;
  unsigned w = 63 - static_cast<unsigned>(std::countl_zero(summary_));
  unsigned bin = w * 64 + 63 - static_cast<unsigned>(std::countl_zero(words_[w]));
  Block *best = nullptr;
  for (Block *b = heads_[bin]; b != nullptr; b = b->bin_next)
    if (best == nullptr || b->size > best->size) best = b;
  return best;
}

}  // namespace zrt
