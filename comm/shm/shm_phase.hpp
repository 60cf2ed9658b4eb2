// One phase of a shm operation (shm_backend.hpp): a number of channel steps, each produced
// then consumed by every rank (shm_channel.hpp), and the helper that walks a plan's pieces.
// The staged phases live in shm_backend.cpp, the single-copy ones in cma_phases.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "comm/shm/shm_backend.hpp"

namespace zrt {

// Calls fn(lo, hi, piece) for the part [lo, hi) of every piece that overlaps [begin, end),
// and gap(lo, hi) for the parts of [begin, end) no piece covers.
template <class Fn, class Gap>
void for_pieces(const ShmPieces &pieces, size_t begin, size_t end, Fn fn, Gap gap) {
  auto it = std::upper_bound(pieces.begin(), pieces.end(), begin,
                             [](size_t x, const ShmPiece &p) { return x < p.stream; });
  if (it != pieces.begin()) --it;
  size_t at = begin;
  for (; it != pieces.end() && it->stream < end; ++it) {
    const size_t lo = std::max(it->stream, begin), hi = std::min(it->stream + it->length, end);
    if (lo >= hi) continue;
    if (lo > at) gap(at, lo);
    fn(lo, hi, *it);
    at = hi;
  }
  if (at < end) gap(at, end);
}

class Phase {
 public:
  virtual ~Phase() = default;
  virtual uint64_t steps() const = 0;
  // Step j of this phase is channel step s.
  virtual void produce(uint64_t j, uint64_t s) = 0;
  // Returns false when it stopped early to let the caller come back (a long step is done
  // in pieces, so one step() call never runs for long); it is called again for the same
  // step until it returns true.
  virtual bool consume(uint64_t j, uint64_t s) = 0;
  // Called instead of consume while the peers have not all produced step j yet: a share of
  // the step's work that needs nothing from them, so waiting for a late peer is not idle.
  virtual void ahead(uint64_t j) { (void)j; }
  bool after_previous = false;  // produce only once the previous phase is consumed
  bool lockstep = false;        // produce each step only once the one before is consumed
  // The operation's failure, shared by its phases: once set, phases still run all their
  // steps (every rank reserved them) but move no data, and the operation fails at its end.
  std::string *failure = nullptr;
};

}  // namespace zrt
