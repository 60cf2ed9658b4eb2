// One checkpoint save (zrt_checkpoint_save, zrt_checkpoint_save_async), in three parts:
//
//  start    collective, in the caller's call: agree on the path, plan which blocks each
//           rank writes (block_plan.hpp), copy this rank's blocks into pinned staging (the
//           parts other ranks own arrive by message), and rank 0 creates PATH.tmp's HDF5
//           skeleton: attributes and contiguous datasets, allocated and aligned, never filled.
//  write    local, on a thread of its own for an asynchronous save: pwrite each block at
//           its dataset's offset, its XXH3 computed as it goes out, then one fsync.
//  settle   collective, at the engine's next call: once every rank's writes are done,
//           rank 0 writes the block checksums into the file's metadata, syncs it and
//           renames PATH.tmp to PATH; a failure on any rank is reported on every rank and
//           PATH.tmp removed, so the previous checkpoint stays.
//
// The engine's state is copied before it can change: by start itself for a synchronous save
// or a device engine, else by the writer's thread before it writes, while the engine's
// calls that change the state (the step, zrt_param_set, a load) wait for that copy. A synchronous
// save writes host state in place where one run of it covers a block, and settles at once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <hdf5.h>

#include "optim/checkpoint/block_plan.hpp"
#include "optim/checkpoint/direct_writer.hpp"
#include "optim/pending_save.hpp"
#include "optim/zero_engine.hpp"

namespace zrt::checkpoint {

class BackgroundSave : public PendingSave, public std::enable_shared_from_this<BackgroundSave> {
 public:
  // Collective. The engine must have no save pending (Engine::settle_save first).
  static std::shared_ptr<BackgroundSave> start(Engine &engine, const std::string &pattern,
                                               const std::string &metadata, int keep_last,
                                               bool async);
  ~BackgroundSave() override;

  bool settle(bool wait) override;
  void wait_for_snapshot() override;
  void abandon() override;

  // Local: whether it has ended (published or failed), and how.
  bool ended() const { return ended_; }
  zrt_status_t status() const { return status_; }
  const std::string &message() const { return message_; }
  const std::string &path() const { return path_; }
  // Seconds start() took on this rank (what an asynchronous save blocks for).
  double start_seconds() const { return start_seconds_; }

 private:
  BackgroundSave(Engine &engine) : engine_(engine) {}
  struct Write {
    size_t dataset;       // index into offsets_
    size_t begin, count;  // elements of the dataset
    const float *values;
  };
  // A copy into staging that the writer makes before it writes anything.
  struct Copy {
    void *dst;
    const void *src;
    size_t bytes;
  };
  void take_snapshot();             // snapshot_'s copies, then snapshot_taken_
  void write_all(bool background);  // the writer: on the thread, or inline
  void publish();  // settle's gathering of the checksums, and rank 0's rename, agreed
  void end_with(const Error &err);  // records the failure, removes PATH.tmp

  Engine &engine_;
  std::string pattern_, path_, tmp_;
  int keep_last_ = 0;
  int64_t step_ = 0;
  size_t block_ = kBlockElements;         // checkpoint.block_bytes, in elements
  std::unique_ptr<DirectWriter> writer_;  // PATH.tmp, this rank's; closed by the writer
  std::vector<std::string> names_;        // datasets, in file order
  std::vector<size_t> numel_;             // their elements
  std::vector<uint64_t> offsets_;         // their byte offsets in PATH.tmp
  std::vector<Write> writes_;             // this rank's
  EngineBuffer staging_;                  // the copies writes_ point into
  // An asynchronous save of host state copies it into staging on the writer's thread
  // first, while the program's forward and backward run (reading the state, not changing
  // it); the engine's calls that change the state wait for snapshot_taken_.
  std::vector<Copy> snapshot_;
  std::mutex snapshot_mutex_;
  std::condition_variable snapshot_done_;
  bool snapshot_taken_ = true;    // guarded by snapshot_mutex_
  std::vector<uint64_t> hashes_;  // (dataset, block, XXH3) per block written
  std::thread thread_;
  bool async_ = false;  // zrt_checkpoint_save_async: written on thread_, published in a step
  std::atomic<int> written_{0};  // 0 writing, 1 done, 2 failed
  std::atomic<bool> cancel_{false};
  std::string write_error_;  // set before written_ = 2
  bool ended_ = false;
  zrt_status_t status_ = ZRT_SUCCESS;
  std::string message_;
  double start_seconds_ = 0;
};

// The kind of optimizer state the engine keeps ("adam", "momentum", "none"), and its
// arrays with their dataset prefixes: params/ first, then the moments.
const char *optimizer_state_kind(const Engine &e);
std::vector<std::pair<std::string, float * Engine::StatePiece::*>> state_arrays(
    const std::string &kind);

// Creates the datasets (contiguous, allocated, never filled) and returns their offsets.
std::vector<uint64_t> create_datasets(hid_t file, const std::vector<std::string> &names,
                                      const std::vector<std::vector<int64_t>> &shapes);

}  // namespace zrt::checkpoint
