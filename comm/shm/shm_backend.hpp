// The shm backend: collectives among the ranks of one node through shared memory
// (ShmChannel), by direct vectorized loads and stores, pipelined in slot-sized steps.
//
// reduce-scatter: in each step every rank copies, for every other rank, the next piece of
//   that rank's shard into its slot; each rank then sums its own piece from all slots and
//   its own buffer in rank order (ordered_sum: fp32 accumulation, one rounding), so the
//   result is the deterministic one whether or not deterministic mode was asked for.
// all-gather: every rank copies the next piece of its shard into its slot (and into its
//   own place in the output); the others copy it out.
// all-reduce: the reduce-scatter into the output, then the all-gather in place.
// broadcast: the root's all-gather of the whole buffer.
//
// Single copy (comm.shm.single_copy): where Linux Cross Memory Attach works between the
// node's ranks (probed at setup), all-gather phases over large buffers read the peers'
// buffers directly with process_vm_readv instead (cma_phases.hpp), and the slots carry
// only addresses and completion: one copy instead of two. Reduce-scatter phases do so only
// when single copy is forced (cma): there it saves no pass.
//
// Shared buffers (comm.shm.direct): buffers from zrt_comm_mem_alloc are mapped by every
// rank of the node (shared_segments.hpp). An operation of comm.shm.direct_bytes and more
// first posts where its buffers lie; when every rank's are shared, a reduce-scatter sums
// straight from the peers' send buffers and an all-gather copies straight from their
// sources, one pass over the data (mapped_phases.hpp); otherwise the phases above run.
//
// The data layout of both phases is a list of pieces, so the hierarchical backend can run
// them on a node's share of a larger communicator's buffers without copying them first.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/backend.hpp"
#include "comm/shm/shared_segments.hpp"
#include "comm/shm/shm_channel.hpp"

namespace zrt {

// Elements [stream, stream + length) of a rank's stream are buffer elements [buffer,
// buffer + length).
struct ShmPiece {
  size_t stream = 0;
  size_t buffer = 0;
  size_t length = 0;
};
using ShmPieces = std::vector<ShmPiece>;  // sorted by stream, disjoint

// Rank d receives in out[x] the rank-order reduction of send[pieces[d](x)] over all ranks,
// for x < stream_length. Elements of its stream outside every piece are set to zero when
// zero_gaps (the padding of a shard), else left alone.
struct ShmReduceScatterPlan {
  const void *send = nullptr;
  void *out = nullptr;
  size_t stream_length = 0;
  std::vector<ShmPieces> pieces;  // per destination rank
  bool zero_gaps = true;
  bool stream = false;  // sums write out with streaming stores (CollArgs::recv_cold)
  zrt_dtype_t dtype = ZRT_DTYPE_FP32;
  zrt_op_t op = ZRT_OP_SUM;
};

// Rank s's stream src[0, stream_length) lands in recv[pieces[s](x)] on every rank (on s
// itself only when copy_own).
struct ShmAllGatherPlan {
  const void *src = nullptr;
  void *recv = nullptr;
  size_t stream_length = 0;
  std::vector<ShmPieces> pieces;  // per source rank
  bool copy_own = true;
  bool stream = false;  // copies write recv with streaming stores (CollArgs::recv_cold)
  zrt_dtype_t dtype = ZRT_DTYPE_FP32;
};

class ShmBackend final : public Backend {
 public:
  // Collective over group.comm. Throws Error(ZRT_ERR_NOT_SUPPORTED) on every rank when
  // the ranks are not all on one node (as the context sees nodes, faked ones included), or
  // when comm.shm.single_copy=cma and process_vm_readv does not work between them.
  explicit ShmBackend(const BackendGroup &group);
  ~ShmBackend() override;

  const char *name() const override { return "shm"; }
  std::unique_ptr<BackendOp> start(const CollArgs &args) override;
  void describe(nlohmann::json &out) const override;
  SharedBuffers *shared_buffers() override { return segments_.get(); }
  void abandoned() override {
    if (segments_) segments_->abandon();
    if (channel_) channel_->abandon();
  }

  // The building blocks, for the hierarchical backend: one operation running a
  // reduce-scatter, an all-gather, or both one after the other (the all-gather starts
  // producing once this rank has finished the reduce-scatter, so it may read that phase's
  // output). Every rank must start the same plans in the same order; the operation's
  // steps are reserved now, so it may be stepped later.
  std::unique_ptr<BackendOp> start_plans(std::optional<ShmReduceScatterPlan> reduce_scatter,
                                         std::optional<ShmAllGatherPlan> all_gather);

  int rank() const { return group_.rank; }
  int size() const { return group_.size; }

 private:
  // Whether a phase over this stream copies once with process_vm_readv (cma_phases.hpp).
  bool single_copy(size_t stream_length, zrt_dtype_t dtype, bool reduce) const;

  BackendGroup group_;
  std::unique_ptr<ShmChannel> channel_;  // none for a single rank
  std::vector<pid_t> pids_;              // per rank when single copy works, else empty
  size_t single_copy_bytes_ = 0;         // buffers this large and larger copy once
  bool single_copy_reduce_ = false;      // reduce-scatter phases too (comm.shm.single_copy=cma)
  std::string single_copy_why_;          // why single copy does not work, if it does not
  std::vector<char> scratch_;            // the single-copy reduce-scatter's
  // zrt_comm_mem_alloc's buffers (none for a single rank or comm.shm.direct=off), and the
  // size from which operations look for them (mapped_phases.hpp).
  std::unique_ptr<SharedSegments> segments_;
  size_t direct_bytes_ = 0;
  std::atomic<uint64_t> direct_phases_{0};  // phases that ran direct, for zrt-info and tests
};

}  // namespace zrt
