// Where every parameter lives. Parameters are packed, in registration order, into one flat
// buffer. The buffer is cut into buckets of at most the bucket size: contiguous runs of
// whole parameters, formed from the end (the order backward produces gradients). A
// parameter larger than the bucket size is cut into buckets of its own (DeepSpeed's
// reduce_bucket_size: the size bounds every bucket, whatever the largest tensor): pieces
// of the bucket size rounded down to n * kAlign elements from its start, the last one
// shorter, so the parameter stays contiguous. Each bucket is padded to a multiple of
// n * kAlign elements and split into n equal slices; rank r owns slice r of every bucket.
// The bucket is therefore the unit of every collective (a reduce-scatter of a bucket hands
// each rank its slice; an all-gather rebuilds it), and a rank's shard is the concatenation
// of its slices.
//
// A group is what must be one contiguous buffer when a bucket is materialized (gradient
// buckets, stage 3's gathered parameters): a bucket alone, or all the buckets of a
// parameter cut into several, which the caller sees as one tensor. Its buckets have
// consecutive indices from `group` on, the last one first in the flat buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace zrt {

struct ParamInfo {
  std::string name;
  std::vector<int64_t> shape;
  size_t numel = 0;
  size_t offset = 0;         // first element in the flat (padded) buffer
  int bucket = -1;           // its first bucket in reduction order (its last piece)
  int buckets = 1;           // buckets [bucket, bucket + buckets) hold it
  double weight_decay = -1;  // < 0: the engine's
};

struct BucketInfo {
  int index = 0;            // position in reduction order: bucket 0 is reduced first
  size_t offset = 0;        // first element in the flat buffer
  size_t length = 0;        // padded elements, a multiple of n * kAlign
  size_t slice = 0;         // length / n
  size_t shard_offset = 0;  // where this bucket's slice starts in a rank's shard
  int first_param = 0;      // parameters [first_param, last_param] in registration order
  int last_param = 0;
  int group = 0;            // the group's first bucket
  int group_buckets = 1;    // buckets in the group
  size_t group_offset = 0;  // the group's first element in the flat buffer
  size_t group_length = 0;  // the group's elements (padding included)
};

class Layout {
 public:
  // Elements every slice is a multiple of: 64 bytes of fp32, so vector kernels see
  // aligned slices.
  static constexpr size_t kAlign = 16;

  Layout() = default;
  // params: in registration order, with name, shape and numel set. bucket_elements: the
  // target bucket size in elements (at least 1).
  Layout(std::vector<ParamInfo> params, size_t bucket_elements, int nranks);

  const std::vector<ParamInfo> &params() const { return params_; }
  const std::vector<BucketInfo> &buckets() const { return buckets_; }
  int nranks() const { return nranks_; }
  size_t total() const { return total_; }        // padded elements of the flat buffer
  size_t unpadded() const { return unpadded_; }  // sum of numel
  size_t shard() const { return total_ / static_cast<size_t>(nranks_); }  // per rank
  size_t max_bucket() const { return max_bucket_; }
  // The longest group of one bucket, and the longest group of several (0 if none).
  size_t max_single_group() const { return max_single_group_; }
  size_t max_split_group() const { return max_split_group_; }
  const BucketInfo &bucket(int index) const { return buckets_[static_cast<size_t>(index)]; }

  // Rank r's slice of bucket b in flat coordinates.
  size_t slice_begin(const BucketInfo &b, int rank) const {
    return b.offset + b.slice * static_cast<size_t>(rank);
  }

 private:
  std::vector<ParamInfo> params_;
  std::vector<BucketInfo> buckets_;
  int nranks_ = 1;
  size_t total_ = 0, unpadded_ = 0, max_bucket_ = 0;
  size_t max_single_group_ = 0, max_split_group_ = 0;
};

}  // namespace zrt
