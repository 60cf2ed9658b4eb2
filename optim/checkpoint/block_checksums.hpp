// Format 2's checksums: each dataset's row-major fp32 values in blocks of a fixed grid
// (block_plan.hpp), an XXH3-64 per block in the dataset's attribute xxh3_blocks, and in
// xxh3 one checksum for the whole dataset: the block's own for a dataset of one block
// (so it is XXH3-64 of the values, as in format 1), else XXH3-64 of the block checksums
// (little-endian uint64s, in order). The grid's block size is the root attribute
// checksum_block (elements).
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace zrt::checkpoint {

// The checksums of values[0, n) in blocks of `block` elements (the last may be shorter).
std::vector<uint64_t> block_hashes(const float *values, size_t n, size_t block);
uint64_t dataset_checksum(const std::vector<uint64_t> &blocks);

// Writes xxh3_blocks and xxh3 on the dataset.
void write_checksums(hid_t dataset, const std::vector<uint64_t> &blocks);

// A dataset's stored block checksums, checked for their count (n elements) and against
// the dataset's xxh3. Throws Error(ZRT_ERR_IO) naming the dataset when either is wrong.
std::vector<uint64_t> read_block_checksums(hid_t dataset, const std::string &name, size_t n,
                                           size_t block);

}  // namespace zrt::checkpoint
