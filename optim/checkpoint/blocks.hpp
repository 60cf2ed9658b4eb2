// A flattened, row-major range of an N-dimensional dataset as HDF5 hyperslab blocks: a rank
// holds a contiguous run of a parameter's elements, which in the parameter's full shape is
// at most 2N-1 rectangular blocks. Selected together (H5S_SELECT_OR), they are traversed in
// row-major order, the order of the run in memory.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <vector>

namespace zrt {

struct HyperBlock {
  std::vector<hsize_t> start, count;
};

std::vector<HyperBlock> range_blocks(const std::vector<int64_t> &shape, size_t begin, size_t count);

// Selects the runs [begin_i, begin_i + count_i) (disjoint) of a dataspace of `shape`.
void select_runs(hid_t space, const std::vector<int64_t> &shape,
                 const std::vector<std::pair<size_t, size_t>> &runs);

}  // namespace zrt
