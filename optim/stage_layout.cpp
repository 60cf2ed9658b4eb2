#include "optim/stage_layout.hpp"

#include "runtime/error.hpp"

namespace zrt {

StageLayout StageLayout::of(int stage) {
  StageLayout s;
  s.stage = stage;
  switch (stage) {
    case 0:
      return s;
    case 1:
      s.state = Extent::Shard;
      s.reduction = Reduction::ReduceScatterToSlice;
      s.gather_after_step = true;
      s.updates_everything = false;
      return s;
    case 2:
      s.state = s.grads = Extent::Shard;
      s.reduction = Reduction::ReduceScatterBuckets;
      s.gather_after_step = true;
      s.updates_everything = false;
      return s;
    case 3:
      s.params = s.state = s.grads = Extent::Shard;
      s.reduction = Reduction::ReduceScatterBuckets;
      s.gather_on_use = true;
      s.updates_everything = false;
      return s;
    default:
      break;
  }
  fail(ZRT_ERR_INTERNAL, "no stage layout for stage {}", stage);
}

std::vector<OwnedRange> StageLayout::owned_ranges(const Layout &layout, int rank) const {
  std::vector<OwnedRange> owned;
  for (const BucketInfo &b : layout.buckets()) {
    if (updates_everything) {
      for (int r = 0; r < layout.nranks(); ++r) {
        size_t flat = layout.slice_begin(b, r);
        owned.push_back({b.index, r, flat, flat, b.slice});
      }
    } else {
      owned.push_back(slice_of(layout, b, rank));
    }
  }
  return owned;
}

}  // namespace zrt
