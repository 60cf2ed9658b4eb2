// Deferred starts in the same order on every rank. MPI requires the collectives on one
// communicator to start in the same order everywhere, and a backend op whose second phase
// starts when its first completes would break that: completion order differs between
// ranks. Each such op takes a ticket when it starts (in sequence order, the same on every
// rank) and starts its deferred phase only on its turn.
#pragma once

#include <cstdint>
#include <set>

namespace zrt {

class StartOrder {
 public:
  uint64_t take() { return next_ticket_++; }
  bool is_turn(uint64_t ticket) const { return ticket == next_start_; }
  // The holder of the current turn started its phase.
  void started() { advance(); }
  // A ticket that will never start (its op failed or was abandoned): later ones proceed.
  void skip(uint64_t ticket) {
    if (ticket == next_start_)
      advance();
    else if (ticket > next_start_)
      skipped_.insert(ticket);
  }

 private:
  void advance() {
    ++next_start_;
    while (!skipped_.empty() && *skipped_.begin() == next_start_) {
      skipped_.erase(skipped_.begin());
      ++next_start_;
    }
  }
  uint64_t next_ticket_ = 0;
  uint64_t next_start_ = 0;
  std::set<uint64_t> skipped_;
};

}  // namespace zrt
