// The read side of a checkpoint load: the blocks of the datasets a rank holds, read,
// checked against their checksums and copied into the engine, several at a time.
//
// Why: the load used to map the file and hash it through the page cache, one block after
// another on one thread. From storage that ran at 0.39x a plain pread of the same bytes
// (1.13 against 2.91 GB/s): page faults, readahead that stops at each block, and no read in
// flight while a block was hashed.
//
// How. Worker threads (as many as the cores the rank may use, at least two, at most eight)
// take blocks in file order and read each into an aligned buffer of their own: through the
// page cache when all of it is there (mincore), else with O_DIRECT, so
// storage sees large requests from every worker at once and the page cache is not filled
// with a copy of the state (DeepSpeed's FastPersist reads the same way). File systems that
// refuse O_DIRECT, and checkpoint.direct_io off, read through the page cache. The buffer
// is hashed and, if it matches, copied into the engine: host state by the worker, device
// state by the calling thread (the engine's stream belongs to it). What was hashed is what
// is copied. Blocks too large to stage (over 256 MiB: a format 1 dataset is one block) are
// hashed and copied where the file is mapped.
//
// The guarantee: no byte of a block that does not match its checksum reaches the engine.
// Blocks that matched may have landed before a bad one was found; the caller tells the
// engine (Engine::mark_state_incomplete), which then refuses to step or save until a load
// succeeds or every parameter is set again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace zrt::checkpoint {

// Where one dataset's checksummed blocks lie.
struct Source {
  std::string name;
  size_t numel = 0, block = 0;   // format 1: one block of the whole dataset
  std::vector<uint64_t> hashes;  // per block
  uint64_t offset = 0;           // of its bytes in the file, when contiguous
  bool contiguous = false;
  std::vector<float> values;  // read through HDF5 (a dataset that is not contiguous)
};

// Elements [from, from + count) of a block's dataset go to dst.
struct BlockTarget {
  float *dst = nullptr;
  bool on_device = false;
  size_t from = 0, count = 0;
};

// One block of one dataset, and where the part this rank holds goes.
struct BlockJob {
  const Source *src = nullptr;
  size_t block = 0;
  std::vector<BlockTarget> targets;
};

// What a read did, for the debug log and the benchmarks' notes.
struct BlockReadStats {
  int threads = 0;
  size_t blocks = 0, cached_blocks = 0, mapped_blocks = 0, direct_blocks = 0, buffered_blocks = 0;
  size_t bytes = 0;
};

// Reads, checks and copies every job. Throws Error(ZRT_ERR_IO) naming the dataset and block
// of the first bad block it found (and the file), after the other workers have stopped.
// *wrote is set once any byte reached a target. device_copy(dst, src, bytes) copies to
// device state and returns when the bytes have arrived; it runs on the calling thread.
BlockReadStats read_blocks(const std::string &path, std::vector<BlockJob> &jobs, bool direct,
                           const std::function<void(void *, const void *, size_t)> &device_copy,
                           bool *wrote);

}  // namespace zrt::checkpoint
