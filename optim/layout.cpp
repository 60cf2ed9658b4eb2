#include "optim/layout.hpp"

#include <algorithm>

namespace zrt {

Layout::Layout(std::vector<ParamInfo> params, size_t bucket_elements, int nranks)
    : params_(std::move(params)), nranks_(nranks) {
  const size_t quantum = kAlign * static_cast<size_t>(nranks);
  const int count = static_cast<int>(params_.size());
  bucket_elements = std::max<size_t>(bucket_elements, 1);

  // Group whole parameters from the last one backwards.
  struct Group {
    int first, last;
  };
  std::vector<Group> groups;
  int last = count - 1;
  while (last >= 0) {
    int first = last;
    size_t size = params_[static_cast<size_t>(last)].numel;
    while (first > 0 && size + params_[static_cast<size_t>(first - 1)].numel <= bucket_elements) {
      --first;
      size += params_[static_cast<size_t>(first)].numel;
    }
    groups.push_back({first, last});
    last = first - 1;
  }

  // Lay the groups out in registration order (the last group formed comes first), each
  // padded to the quantum, so parameters keep registration order in the flat buffer.
  size_t offset = 0, shard_offset = 0;
  buckets_.resize(groups.size());
  for (size_t g = groups.size(); g-- > 0;) {
    BucketInfo &b = buckets_[g];
    b.index = static_cast<int>(g);
    b.first_param = groups[g].first;
    b.last_param = groups[g].last;
    b.offset = offset;
    size_t used = 0;
    for (int p = b.first_param; p <= b.last_param; ++p) {
      ParamInfo &info = params_[static_cast<size_t>(p)];
      info.offset = offset + used;
      info.bucket = b.index;
      used += info.numel;
      unpadded_ += info.numel;
    }
    b.length = std::max<size_t>((used + quantum - 1) / quantum, 1) * quantum;
    b.slice = b.length / static_cast<size_t>(nranks);
    offset += b.length;
    max_bucket_ = std::max(max_bucket_, b.length);
  }
  total_ = offset;
  // Shard offsets follow the flat order too, so a rank's shard is its slices in order.
  for (size_t g = groups.size(); g-- > 0;) {
    buckets_[g].shard_offset = shard_offset;
    shard_offset += buckets_[g].slice;
  }
}

}  // namespace zrt
