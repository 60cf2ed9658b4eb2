#include "optim/checkpoint/blocks.hpp"

#include "optim/checkpoint/h5.hpp"

namespace zrt {

namespace {

void decompose(const std::vector<int64_t> &shape, size_t dim, std::vector<hsize_t> &prefix,
               size_t a, size_t b, std::vector<HyperBlock> &out) {
  if (a >= b) return;
  const size_t n = shape.size();
  size_t stride = 1;
  for (size_t d = dim + 1; d < n; ++d)
    stride *= static_cast<size_t>(shape[d]);
  auto emit = [&](size_t index, size_t extent) {
    HyperBlock blk;
    blk.start = prefix;
    blk.count.assign(prefix.size(), 1);
    blk.start.push_back(index);
    blk.count.push_back(extent);
    for (size_t d = dim + 1; d < n; ++d) {
      blk.start.push_back(0);
      blk.count.push_back(static_cast<hsize_t>(shape[d]));
    }
    out.push_back(std::move(blk));
  };
  if (dim == n - 1) {
    emit(a, b - a);
    return;
  }
  size_t i0 = a / stride, r0 = a % stride, i1 = b / stride, r1 = b % stride;
  auto recurse = [&](size_t index, size_t from, size_t to) {
    prefix.push_back(index);
    decompose(shape, dim + 1, prefix, from, to, out);
    prefix.pop_back();
  };
  if (i0 == i1) {
    recurse(i0, r0, r1);
    return;
  }
  if (r0 != 0) {
    recurse(i0, r0, stride);
    ++i0;
  }
  if (i1 > i0) emit(i0, i1 - i0);
  if (r1 != 0) recurse(i1, 0, r1);
}

}  // namespace

std::vector<HyperBlock> range_blocks(const std::vector<int64_t> &shape, size_t begin,
                                     size_t count) {
  std::vector<HyperBlock> out;
  std::vector<hsize_t> prefix;
  decompose(shape, 0, prefix, begin, begin + count, out);
  return out;
}

void select_runs(hid_t space, const std::vector<int64_t> &shape,
                 const std::vector<std::pair<size_t, size_t>> &runs) {
  h5::check(H5Sselect_none(space), "H5Sselect_none");
  for (const auto &[begin, count] : runs)
    for (const HyperBlock &b : range_blocks(shape, begin, count))
      h5::check(H5Sselect_hyperslab(space, H5S_SELECT_OR, b.start.data(), nullptr, b.count.data(),
                                    nullptr),
                "H5Sselect_hyperslab");
}

}  // namespace zrt
