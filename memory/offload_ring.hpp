// Space management of the offload engine's pinned ring: offsets into [0, capacity).
//
// Pushes take space at the head, in order, wrapping to the start when the end has no
// room. Tokens may be released in any order: backward releases the newest first (the
// head moves back), an optimizer-free recompute may release the oldest first (the tail
// moves on), and a token in the middle is marked and its space comes back once it is at
// either end. Holes in the middle are never reused out of order, which keeps allocation
// O(1) and the ring's contents contiguous in push order.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>

namespace zrt {

class OffloadRing {
 public:
  OffloadRing(size_t capacity, size_t alignment);

  // The offset of `bytes` of space, or nothing when the ring has no room for them.
  std::optional<size_t> reserve(size_t bytes);
  // Gives back the space at offset (from reserve). Throws Error(ZRT_ERR_INTERNAL) for an
  // offset that is not held.
  void release(size_t offset);

  size_t capacity() const { return capacity_; }
  size_t used() const { return used_; }     // bytes held by live entries (rounded)
  size_t entries() const { return live_; }  // live entries

 private:
  struct Entry {
    size_t offset, size;
    bool released;
  };
  size_t head() const;  // end of the newest entry (0 when empty)

  size_t capacity_, alignment_;
  std::deque<Entry> entries_;  // oldest first; released ones wait to reach an end
  size_t used_ = 0, live_ = 0;
};

}  // namespace zrt
