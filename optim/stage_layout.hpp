// Where the engine's buffers live at each ZeRO stage, as code: the engine and its parts ask
// the stage layout instead of testing the stage number.
//
//   P parameters packed in the flat layout (layout.hpp), N ranks; "full" is all P (padded),
//   "shard" is this rank's slice of every bucket (P/N).
//
//            parameters       master weights,   gradients   reduction of the gradients
//            (compute dtype)  moments (fp32)
//   stage 0  full             full              full        all-reduce, last micro-step
//   stage 1  full             shard             full        reduce-scatter into a landing
//                                                           slice, last micro-step
//   stage 2  full             shard             shard       reduce-scatter of each bucket
//                                                           as backward fills it
//   stage 3  shard, gathered  shard             shard       as stage 2
//            on use
//
// With fp32 compute the parameters are the master weights (there is no master buffer), so
// the weights the optimizer updates have the parameters' extent. After the optimizer, stages
// 1 and 2 all-gather the updated parameters; stage 3 gathers them when they are used.
//
// The optimizer runs over owned ranges: (bucket, slice owner) pairs; at stage 0 every pair
// (each rank updates everything), otherwise this rank's slices. Norms and LAMB's trust
// ratios are summed per owned range and then over ranges in a fixed order, so every stage
// computes them identically.
#pragma once

#include <cstddef>
#include <vector>

#include "optim/layout.hpp"

namespace zrt {

enum class Extent { Full, Shard };

enum class Reduction {
  AllReduce,             // stage 0: the full gradient buffer, in place
  ReduceScatterToSlice,  // stage 1: the full gradient buffer into this rank's slice
  ReduceScatterBuckets,  // stages 2-3: each bucket's buffer into this rank's shard
};

// A contiguous run this rank updates: one owner's slice of one bucket.
struct OwnedRange {
  int bucket;
  int owner;     // whose slice
  size_t flat;   // first element, flat coordinates: its index in a full buffer
  size_t state;  // first element in the shard: its index in a shard buffer
  size_t count;

  size_t index(Extent e) const { return e == Extent::Full ? flat : state; }
};

struct StageLayout {
  int stage = 0;
  Extent params = Extent::Full;
  Extent state = Extent::Full;  // master weights and optimizer moments
  Extent grads = Extent::Full;
  Reduction reduction = Reduction::AllReduce;
  bool gather_after_step = false;  // stages 1, 2: all-gather the updated parameters
  bool gather_on_use = false;      // stage 3: zrt_param_gather assembles parameters
  bool updates_everything = true;  // stage 0: every rank updates every slice

  static StageLayout of(int stage);

  // Elements of a buffer of extent e.
  static size_t elements(Extent e, const Layout &layout) {
    return e == Extent::Full ? layout.total() : layout.shard();
  }
  // Gradients accumulate in place over micro-steps and are reduced once, on the last
  // (stages 0-1); otherwise every micro-step reduces its buckets as they fill.
  bool reduces_once() const { return reduction != Reduction::ReduceScatterBuckets; }
  // Where the weights the optimizer updates live: the master buffer with 16-bit compute,
  // the parameters themselves with fp32.
  Extent weights(bool mixed) const { return mixed ? state : params; }

  // The ranges this rank updates, in bucket order (and owner order at stage 0).
  std::vector<OwnedRange> owned_ranges(const Layout &layout, int rank) const;
  // Rank's own slice of bucket b as a range.
  static OwnedRange slice_of(const Layout &layout, const BucketInfo &b, int rank) {
    return {b.index, rank, layout.slice_begin(b, rank), b.shard_offset, b.slice};
  }
};

}  // namespace zrt
