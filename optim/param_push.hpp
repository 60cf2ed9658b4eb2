// Stages 1-2 on one node with the parameters in the engine's node-shared window: each
// rank writes its updated slice of the parameters straight into every peer's parameter
// buffer as the optimizer produces it, a piece at a time while the piece is in cache,
// instead of the all-gather after the step reading every peer's slice back from memory
// (issue 45: "the all-gather into the optimizer's write"). The step then ends with a
// barrier: after it every rank's buffer holds every rank's update, as after the all-gather,
// with the same bits (the same values, copied). What it saves is the all-gather's read of
// the peers' slices from memory; the writes remain (streaming, comm/streaming_copy.hpp).
// BERT-base, LAMB, stage 2 on 2 ranks of a 2-core AMD EPYC: the optimizer and the gather
// took 70.4 and 71.8 ms a step (and 92.7 in a disturbed run) against 73.7-75.1 ms with
// the all-gather (medians of 12 steps, three runs each alternated, 2026-12-06): about
// 0.2% of a 1.65 s step.
//
// Why writing into a peer's buffer is safe: a rank pushes only during the optimizer's
// update, which follows the gradient norm's all-gather over the ranks (optimizer_step.hpp),
// so every peer is inside its step, past backward and past anything its program read
// between backward and the step; it reads and writes only its own slice of its buffer
// until the closing barrier, and the slices are disjoint.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "comm/communicator.hpp"
#include "optim/comm_stats.hpp"
#include "optim/kernels/kernels.hpp"
#include "optim/layout.hpp"

namespace zrt {

class ParamPush {
 public:
  // Collective over control: a ParamPush when every rank can push (eligible on every rank:
  // a host engine at stage 1-2 whose optimizer updates fp32 parameters in place, not
  // offloaded; the communicator's shared memory maps all its ranks; the parameters of
  // params_bytes at `params` lie at the same place in every rank's part of the window),
  // else nullptr on every rank.
  static std::unique_ptr<ParamPush> make(Communicator &comm, MPI_Comm control, char *params,
                                         size_t params_bytes, bool eligible);

  // Copies the updated weights r.weights[0, r.count), which lie in this rank's parameter
  // buffer, to the same place in every peer's. Local; thread-safe for disjoint ranges.
  void push(const OptimRange &r) const;
  // The elements per piece a kernel updates before its piece is pushed: small enough to be
  // in the core's cache still (64 KiB of fp32).
  static constexpr size_t kPiece = 16384;

  // After every rank's update: the barrier that ends the pushes, counted as the all-gather
  // it replaces (one per bucket, of the bucket's bytes) in stats. Collective over control.
  void finish(MPI_Comm control, const Layout &layout, zrt_dtype_t dtype, CommStats &stats) const;

 private:
  ParamPush(char *params, size_t bytes, std::vector<char *> peers)
      : params_(params), bytes_(bytes), peers_(std::move(peers)) {}
  char *params_;
  size_t bytes_;
  std::vector<char *> peers_;  // every other rank's parameter buffer, mapped here
};

}  // namespace zrt
