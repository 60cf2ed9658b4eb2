// The gradient side of a micro-step: where backward writes each gradient, which parameters
// are ready, and the reductions that follow (stage_layout.hpp's Reduction).
//
// Buckets are reduced in the fixed bucket order, each once all of its gradients are ready
// and every earlier bucket has been posted, so the order in which zrt_param_grad_ready is called
// (which may differ across ranks) never reaches the collectives.
//
//  - stage 0: all-reduce of the full gradient buffer, bucket by bucket, on the last
//    micro-step (earlier micro-steps accumulate in place);
//  - stage 1: reduce-scatter of the full buffer into a landing slice, copied into this
//    rank's slice of the full buffer, on the last micro-step;
//  - stages 2-3: backward writes each bucket's group into a bucket buffer (BufferSet),
//    reduce-scattered as soon as the bucket is ready straight into this rank's shard of the
//    gradient on the first micro-step, or into a landing slice that is added to it on later
//    ones; the group's buffer is free again once its last bucket is reduced.
//
// Reductions overlap backward (overlap on) and complete in order. On the device every
// buffer here is device memory, touched through the engine's stream (engine_memory.hpp):
// a bucket buffer (or the part of it the program adds to) is zeroed on the stream and
// handed to the program after it, and a
// reduction waits for the program's work so far (its gradients) before it reads. With
// ZeRO-Offload on the device, each bucket's reduced slice lands in a device landing slice
// and goes to the host shard of the gradient as soon as the reduction completes (added
// there on later micro-steps), while backward goes on.
//
// Not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "optim/buffer_set.hpp"
#include "optim/model_state.hpp"
#include "optim/owned_request.hpp"

namespace zrt {

class GradientReducer {
 public:
  GradientReducer(Communicator &comm, EngineMemory &memory, const Layout &layout,
                  const StageLayout &stage, ModelState &state, const EngineSettings &settings,
                  CommStats &stats, const int64_t &step);
  ~GradientReducer();  // waits for the reductions in flight, which use the buffers

  // The buffers the constructor makes (bucket buffers, landing slices), in bytes each.
  static std::vector<size_t> initial_buffers(const Layout &layout, const StageLayout &stage,
                                             const EngineSettings &settings, bool to_host);
  GradientReducer(const GradientReducer &) = delete;
  GradientReducer &operator=(const GradientReducer &) = delete;

  // Where backward writes parameter `index`'s gradient (its group's bucket buffer at stages
  // 2-3, which may wait for a reduction to free one). Throws ZRT_ERR_INVALID_STATE after
  // grad_ready in this micro-step. With may_overwrite (zrt_param_grad_buffer) the bucket
  // buffer is not zeroed for it and *overwrite says the program writes every element; the
  // first call for a parameter in a micro-step decides (engine.h).
  void *grad_data(int index, bool may_overwrite, bool *overwrite);
  // Marks the gradient complete and posts every bucket that is now ready in order
  // (stages 0-1: on the last micro-step only). Throws ZRT_ERR_INVALID_STATE if called twice.
  void grad_ready(int index);

  int micro_step() const { return micro_; }
  bool last_micro_step() const { return micro_ + 1 >= accumulation_steps_; }
  // Whether the buckets of this micro-step are reduced now (every micro-step at stages
  // 2-3, the last one at stages 0-1).
  bool reduces_now() const { return !stage_.reduces_once() || last_micro_step(); }

  // Posts every ready bucket not yet posted, in bucket order, if this micro-step reduces.
  void post_ready();
  // The first parameter not made ready in this micro-step, -1 if none.
  int first_not_ready() const;
  // After an agreed failure: reduce whatever is left as it stands (the other ranks expect
  // those reductions), then drop this micro-step's gradients.
  void abandon_micro_step();
  // Waits for every reduction in flight.
  void drain();
  // A micro-step that is not the last is over: gradients stay, readiness resets.
  void next_micro_step();
  // The accumulation is over (applied or skipped): zero the full gradient buffer (stages
  // 0-1; stages 2-3 overwrite their shard on the next first micro-step), back to micro-step 0.
  void end_accumulation();
  // Waits for the reductions in flight and for their results' way to the host (ZeRO-Offload):
  // the gradients are then where the optimizer reads them.
  void finish();
  // Between optimizer steps: no micro-step begun, nothing ready, nothing in flight.
  bool idle() const;

  // ZeRO-Offload's CPU step during backward (speculative_step.hpp): `landed` is told each
  // bucket whose reduced slice is on its way to the host shard on the last micro-step,
  // with an event that completes when it is there; `settle` runs before the gradients are
  // zeroed (the CPU must be done with them). Completed reductions then land as soon as
  // zrt_param_grad_ready sees them, not only when a buffer is needed. Empty: none.
  void set_offload_hooks(std::function<void(int bucket, Event arrived)> landed,
                         std::function<void()> settle);

  size_t buffer_bytes() const { return buckets_.bytes() + landing_.bytes(); }
  size_t shared_bytes() const {  // of buffer_bytes(), in node-shared memory
    return buckets_.bytes(Place::Shared) + landing_.bytes(Place::Shared);
  }

 private:
  struct Pending {
    int bucket;
    OwnedRequest request;
    int landing = -1;  // landing slice the result lands in, or -1
  };

  // Stages 2-3: the bucket buffer of the bucket's group, taken on first use and zeroed
  // then, whole or (zero_whole false: its parameters are to be overwritten) only where no
  // parameter lies (the padding, which the reductions read too).
  char *group_buffer(int bucket, bool zero_whole = true);
  // Zeroes parameter p's part of its group's buffer (taken, not zeroed whole).
  void zero_param(const ParamInfo &p);
  int take_landing();
  void post_bucket(int bucket);
  void complete_oldest();
  // Lands every reduction at the front that has completed, without waiting.
  void land_completed();
  void reset_readiness();

  // Where a completed reduction's slice goes: into the gradient in place, added to it, or
  // to the host shard (ZeRO-Offload).
  void land(const BucketInfo &b, int landing);
  void land_slice(const BucketInfo &b, int landing);

  Communicator &comm_;
  CommStats &stats_;
  const int64_t &step_;  // the engine's step count, which each reduction says it is for
  EngineMemory &memory_;
  const Layout &layout_;
  const StageLayout stage_;
  ModelState &state_;
  const zrt_dtype_t dtype_;
  const size_t esize_;
  const bool overlap_;
  const int accumulation_steps_;
  const int rank_;

  BufferSet buckets_;           // stages 2-3: bucket buffers, one per group being written
  std::vector<int> buffer_of_;  // group -> bucket buffer, -1 if none
  BufferSet landing_;           // slice-sized landing buffers
  size_t landing_bytes_ = 0;
  const bool to_host_;         // ZeRO-Offload on the device (of some buckets, when partial)
  EngineBuffer host_landing_;  // to_host_: where a later micro-step's slice is added from
  // Whether bucket b's reduced slice goes to the host shard (its state is offloaded).
  bool to_host(const BucketInfo &b) const {
    return to_host_ && b.shard_offset >= state_.host_begin();
  }

  std::function<void(int, Event)> landed_;
  std::function<void()> settle_;

  // How each parameter's buffer was handed out in this micro-step (stages 2-3): the first
  // call decides whether it is zeroed for adding or left to be overwritten.
  enum class Handed : char { None, Add, Overwrite };
  std::vector<Handed> handed_;
  std::vector<char> group_zeroed_;  // per group: its buffer was zeroed whole when taken
  // Per group: the [begin, end) element ranges of its buffer that no parameter covers.
  std::vector<std::vector<std::pair<size_t, size_t>>> group_gaps_;

  std::vector<char> ready_;        // per parameter, this micro-step
  std::vector<int> bucket_ready_;  // ready parameters per bucket
  int next_post_ = 0;              // the next bucket to reduce, in bucket order
  std::deque<Pending> in_flight_;
  int micro_ = 0;
};

}  // namespace zrt
