// How a save divides its datasets among the ranks. Checksums cover blocks of a fixed grid
// of each dataset's row-major elements (block k: [k*B, min((k+1)*B, n))), so the checksums
// of a file do not depend on the world size that saved it, and a reader on any world size
// verifies exactly the blocks it reads. The rank that owns a block's first element writes
// and hashes the whole block; the parts of it that other ranks own are sent to it first
// (at most one block's worth per rank boundary). Every write is then whole blocks: large,
// and aligned as the dataset is.
#pragma once

#include <cstddef>
#include <vector>

namespace zrt::checkpoint {

// 4 MiB of fp32: large enough for writes at the file system's speed, small enough that a
// reader whose share starts mid-block reads little it does not keep.
inline constexpr size_t kBlockElements = size_t{1} << 20;

// A contiguous run of one parameter's elements and the rank that saves it.
struct OwnedRun {
  int param = 0, owner = 0;
  size_t begin = 0, count = 0;
};

// Whole blocks [begin, begin + count) of one parameter that one rank writes.
struct BlockRange {
  int param = 0, writer = 0;
  size_t begin = 0, count = 0;
};

// Elements [begin, begin + count) of a parameter that `from` owns and `to` writes.
struct Transfer {
  int param = 0, from = 0, to = 0;
  size_t begin = 0, count = 0;
};

struct SavePlan {
  std::vector<BlockRange> writes;   // every rank's, by parameter then position
  std::vector<Transfer> transfers;  // every rank's, in one order all ranks agree on
};

// all: every rank's runs, each element of each parameter exactly once; numel: each
// parameter's element count. Throws Error(ZRT_ERR_INTERNAL) when the runs do not cover
// each parameter exactly.
SavePlan plan_save(std::vector<OwnedRun> all, const std::vector<size_t> &numel,
                   size_t block = kBlockElements);

// The blocks [first, last) that elements [begin, begin + count) of n touch.
inline size_t first_block(size_t begin, size_t block) {
  return begin / block;
}
inline size_t end_block(size_t begin, size_t count, size_t block) {
  return (begin + count + block - 1) / block;
}
inline size_t block_count(size_t n, size_t block) {
  return (n + block - 1) / block;
}

}  // namespace zrt::checkpoint
