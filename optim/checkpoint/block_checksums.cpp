#include "optim/checkpoint/block_checksums.hpp"

#include <xxhash.h>

#include <algorithm>

#include "optim/checkpoint/block_plan.hpp"
#include "optim/checkpoint/h5.hpp"

namespace zrt::checkpoint {

std::vector<uint64_t> block_hashes(const float *values, size_t n, size_t block) {
  std::vector<uint64_t> out;
  out.reserve(block_count(n, block));
  for (size_t at = 0; at < n; at += block)
    out.push_back(XXH3_64bits(values + at, std::min(block, n - at) * sizeof(float)));
  return out;
}

uint64_t dataset_checksum(const std::vector<uint64_t> &blocks) {
  if (blocks.size() == 1) return blocks[0];
  // The hosts zerort runs on are little-endian, as the format's uint64s are.
  return XXH3_64bits(blocks.data(), blocks.size() * sizeof(uint64_t));
}

void write_checksums(hid_t dataset, const std::vector<uint64_t> &blocks) {
  h5::write_attr(dataset, "xxh3_blocks", blocks);
  h5::write_attr(dataset, "xxh3", dataset_checksum(blocks));
}

std::vector<uint64_t> read_block_checksums(hid_t dataset, const std::string &name, size_t n,
                                           size_t block) {
  if (!h5::has_attr(dataset, "xxh3_blocks") || !h5::has_attr(dataset, "xxh3"))
    fail(ZRT_ERR_IO, "dataset /{} has no checksum", name);
  std::vector<uint64_t> blocks = h5::read_attr_uint_array(dataset, "xxh3_blocks");
  if (blocks.size() != block_count(n, block))
    fail(ZRT_ERR_IO,
         "dataset /{} has {} block checksum(s) but its {} elements make {} blocks: the file is "
         "corrupted",
         name, blocks.size(), n, block_count(n, block));
  if (dataset_checksum(blocks) != h5::read_attr_uint(dataset, "xxh3"))
    fail(ZRT_ERR_IO, "dataset /{} does not match its checksum (its block checksums are damaged)",
         name);
  return blocks;
}

}  // namespace zrt::checkpoint
