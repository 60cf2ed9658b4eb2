// Transformer blocks' saved activations moved to pinned host memory between forward and
// backward through zerort's activation offload engine (zerort/memory.h), so that only two
// blocks' worth stay resident instead of L.
//
// The blocks share two slots (block l uses slot l % 2). Forward pushes block l once it is
// computed and, before block l + 2 overwrites the slot, waits for that push. The last two
// blocks are never pushed: they are still in their slots when backward starts, which
// takes them first. Backward fetches block l into its slot before block l's backward and
// at the same time starts bringing block l - 1 straight into the other slot
// (zrt_offload_prefetch_into), so that copy runs while block l's backward computes.
//
//   forward   l: wait(l-2) compute(l) push(l)           (push only for l < L-2)
//   backward  l: fetch(l) prefetch_into(l-1) backward(l)
//
// A forward with no backward after it (evaluation) leaves its tokens behind; the next
// forward discards them first.
#pragma once

#include <zerort/zerort.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpt2 {

/// What the offload engine holds for the blocks, in bytes.
struct OffloadMemory {
  int64_t offloaded = 0;       // held in pinned host memory now
  int64_t peak_offloaded = 0;  // the most held at once so far
  int64_t ring = 0;            // the pinned host ring reserved for them
  double exposed_seconds = 0;  // time spent waiting for copies (not hidden behind compute)
};

class BlockOffload {
 public:
  /// Blocks of @p slot_bytes each in @p slots; creates an engine on @p context with a ring
  /// for the num_layers - 2 blocks that are pushed (none, and no engine, for L <= 2).
  /// Throws std::runtime_error with zerort's message if the ring cannot be allocated.
  BlockOffload(zrt_context_h context, int num_layers, std::array<void *, 2> slots,
               size_t slot_bytes);
  ~BlockOffload();
  BlockOffload(const BlockOffload &) = delete;
  BlockOffload &operator=(const BlockOffload &) = delete;

  /// Slot of block @p l.
  void *slot(int l) const { return slots_[static_cast<size_t>(l % 2)]; }

  /// Before a forward: discards the tokens of a forward that had no backward.
  void begin_forward();
  /// Before block @p l's forward: waits until the push of block l - 2, whose slot block l
  /// overwrites, has finished copying.
  void before_block_forward(int l);
  /// After block @p l's forward (its kernels finished): pushes it, unless it is one of the
  /// last two.
  void after_block_forward(int l);
  /// Before block @p l's backward: brings it back into its slot and starts bringing block
  /// l - 1 into the other one.
  void before_block_backward(int l);

  OffloadMemory memory() const;

 private:
  bool pushed(int l) const { return l < num_layers_ - 2; }
  void check(zrt_status_t st, const char *what) const;
  void discard_all();

  int num_layers_;
  std::array<void *, 2> slots_;
  size_t slot_bytes_;
  zrt_offload_h engine_ = nullptr;
  std::vector<zrt_offload_token_h> tokens_;  // by block; null when not held
};

}  // namespace gpt2
