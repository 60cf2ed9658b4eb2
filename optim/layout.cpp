#include "optim/layout.hpp"

#include <algorithm>

namespace zrt {

Layout::Layout(std::vector<ParamInfo> params, size_t bucket_elements, int nranks)
    : params_(std::move(params)), nranks_(nranks) {
  const size_t quantum = kAlign * static_cast<size_t>(nranks);
  const int count = static_cast<int>(params_.size());
  bucket_elements = std::max<size_t>(bucket_elements, 1);
  // A split parameter's pieces are whole quanta, so that only its last piece is padded and
  // the parameter stays contiguous in the flat buffer.
  const size_t piece = std::max<size_t>(bucket_elements / quantum, 1) * quantum;
  for (ParamInfo &info : params_)
    info.bucket = -1;
  auto padded = [&](size_t n) {
    return std::max<size_t>((n + quantum - 1) / quantum, 1) * quantum;
  };

  // Group whole parameters from the last one backwards. A parameter larger than the bucket
  // size is a group alone: nothing joins it, since its neighbours' sum would be larger.
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

  // Lay the groups out in registration order (the last group formed comes first), so
  // parameters keep registration order in the flat buffer; `flat` lists the buckets in
  // flat order, each group's `group` holding for now the flat position of its last bucket.
  std::vector<BucketInfo> flat;
  size_t offset = 0;
  for (size_t g = groups.size(); g-- > 0;) {
    const size_t group_offset = offset, first_bucket = flat.size();
    ParamInfo &head = params_[static_cast<size_t>(groups[g].first)];
    if (groups[g].first == groups[g].last && head.numel > bucket_elements) {
      head.offset = offset;
      unpadded_ += head.numel;
      for (size_t done = 0; done < head.numel;) {
        const size_t n = std::min(piece, head.numel - done);
        BucketInfo b;
        b.first_param = b.last_param = groups[g].first;
        b.offset = offset;
        b.length = padded(n);
        offset += b.length;
        done += n;
        flat.push_back(b);
      }
    } else {
      BucketInfo b;
      b.first_param = groups[g].first;
      b.last_param = groups[g].last;
      b.offset = offset;
      size_t used = 0;
      for (int p = b.first_param; p <= b.last_param; ++p) {
        ParamInfo &info = params_[static_cast<size_t>(p)];
        info.offset = offset + used;
        used += info.numel;
        unpadded_ += info.numel;
      }
      b.length = padded(used);
      offset += b.length;
      flat.push_back(b);
    }
    for (size_t i = first_bucket; i < flat.size(); ++i) {
      flat[i].group = static_cast<int>(flat.size() - 1);
      flat[i].group_buckets = static_cast<int>(flat.size() - first_bucket);
      flat[i].group_offset = group_offset;
      flat[i].group_length = offset - group_offset;
    }
    size_t &max_group = flat.size() - first_bucket > 1 ? max_split_group_ : max_single_group_;
    max_group = std::max(max_group, offset - group_offset);
  }
  total_ = offset;

  // Reduction order is the reverse of flat order: bucket 0 holds the last parameters.
  const int nb = static_cast<int>(flat.size());
  buckets_.assign(flat.rbegin(), flat.rend());
  for (int i = 0; i < nb; ++i) {
    BucketInfo &b = buckets_[static_cast<size_t>(i)];
    b.index = i;
    b.group = nb - 1 - b.group;
    b.slice = b.length / static_cast<size_t>(nranks);
    max_bucket_ = std::max(max_bucket_, b.length);
    // A parameter's first bucket in reduction order is its last piece.
    for (int p = b.first_param; p <= b.last_param; ++p) {
      ParamInfo &info = params_[static_cast<size_t>(p)];
      if (info.bucket < 0) {
        info.bucket = i;
        info.buckets = b.group_buckets;
      }
    }
  }
  // Shard offsets follow the flat order too, so a rank's shard is its slices in order.
  size_t shard_offset = 0;
  for (int i = nb; i-- > 0;) {
    buckets_[static_cast<size_t>(i)].shard_offset = shard_offset;
    shard_offset += buckets_[static_cast<size_t>(i)].slice;
  }
}

}  // namespace zrt
