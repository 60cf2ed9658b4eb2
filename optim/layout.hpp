// Where every parameter lives. Parameters are packed, in registration order, into one flat
// buffer. The buffer is cut into buckets: contiguous runs of whole parameters, formed from
// the end (the order backward produces gradients), each at most the bucket size unless a
// single parameter is larger. Each bucket is padded to a multiple of n * kAlign elements and
// split into n equal slices; rank r owns slice r of every bucket. The bucket is therefore
// the unit of every collective (a reduce-scatter of a bucket hands each rank its slice; an
// all-gather rebuilds it), and a rank's shard is the concatenation of its slices.
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
  size_t offset = 0;  // first element in the flat (padded) buffer
  int bucket = -1;
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

  // Rank r's slice of bucket b in flat coordinates.
  size_t slice_begin(const BucketInfo &b, int rank) const {
    return b.offset + b.slice * static_cast<size_t>(rank);
  }

 private:
  std::vector<ParamInfo> params_;
  std::vector<BucketInfo> buckets_;
  int nranks_ = 1;
  size_t total_ = 0, unpadded_ = 0, max_bucket_ = 0;
};

}  // namespace zrt
