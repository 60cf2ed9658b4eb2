// The object behind zrt_engine_h: ZeRO stages 0-3 over one flat parameter layout. It keeps
// the life cycle (register, commit, destroy) and orchestrates the step; each concept has
// its own part:
//
//   engine_settings   params struct, file and environment resolved into EngineSettings
//   param_registry    registered parameters, checked across ranks at commit
//   layout            the flat buffer, its buckets and every rank's slices
//   stage_layout      where each buffer lives at each stage (the storage table, as code)
//   engine_memory     host or device: the pools, and the engine's stream on the device
//   model_state       this rank's parameters, master weights, moments and gradients
//   gradient_reducer  gradient buffers, readiness, bucket reductions, accumulation
//   param_gatherer    stage 3: gather cache, prefetch, LRU eviction
//   optimizer_step    overflow, global norm, SGD / Adam / LAMB on the owned ranges
//   param_allgather   updated parameters after the step (stages 1-2), zrt_param_get
//
// A step: validate_ready (post what is ready, agree that every gradient is) -> drain the
// reductions -> overflow check -> norm and clipping -> optimizer -> all-gather updated
// parameters (stages 1-2) or drop the gathered ones (stage 3).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "optim/comm_stats.hpp"
#include "optim/engine_memory.hpp"
#include "optim/engine_settings.hpp"
#include "optim/gradient_reducer.hpp"
#include "optim/kernels/kernels.hpp"
#include "optim/kernels/thread_pool.hpp"
#include "optim/layout.hpp"
#include "optim/loss_scaler.hpp"
#include "optim/lr_scheduler.hpp"
#include "optim/model_state.hpp"
#include "optim/optimizer_step.hpp"
#include "optim/param_gatherer.hpp"
#include "optim/param_push.hpp"
#include "optim/param_registry.hpp"
#include "optim/pending_save.hpp"
#include "optim/speculative_step.hpp"
#include "optim/stage_layout.hpp"
#include "runtime/agreement_watch.hpp"
#include "runtime/mpi_comm.hpp"
#include "runtime/runtime_context.hpp"
#include "zerort/engine.h"

namespace zrt {

// What zrt_engine_step reports (zrt_step_report_t's fields).
struct StepReport {
  bool applied = false, skipped = false;
  int64_t skipped_steps = 0;  // steps skipped for non-finite gradients so far
  int64_t step = 0;
  double loss_scale = 1, grad_norm = 0;
  double offload_copy_seconds = 0, offload_exposed_seconds = 0;
  // ZeRO-Offload: the CPU's time on the update, and the part of it the step waited for.
  double offload_cpu_seconds = 0, offload_cpu_exposed_seconds = 0;
  CommStats comm;  // since the previous report
  double lr = 0;   // of this call's update, or of the next one
};

// What zrt_engine_memory reports (zrt_memory_report_t's fields).
struct MemoryReport {
  int64_t parameter_count = 0;
  int64_t parameters = 0, gradients = 0, master_weights = 0, optimizer_state = 0, buckets = 0;
  int64_t total() const {
    return parameters + gradients + master_weights + optimizer_state + buckets;
  }
  uint64_t gather_fetches = 0, gather_evictions = 0;
  int64_t device_bytes = 0, host_bytes = 0;  // of total
  int64_t node_shared_bytes = 0;             // of host_bytes
  int32_t node_shared_ranks = 0;
  int64_t pinned_bytes = 0;  // of host_bytes, in pinned host memory (not in the C report)
};

class Engine {
 public:
  Engine(Context &context, const EngineSettings &settings);  // collective
  ~Engine();
  // Every rank made its engine (zrt_engine_create agreed on it): see
  // Communicator::set_agreed.
  void creation_agreed() { comm_->set_agreed(); }
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  const EngineSettings &settings() const { return settings_; }
  const StageLayout &stage_layout() const { return stage_; }
  Context &context() const { return context_; }
  bool committed() const { return committed_; }
  // The share of the optimizer state offloaded to the CPU (of the padded elements, after
  // commit; 0 without offload): at least offload_ratio, at a bucket boundary.
  double offload_share() const;
  int param_count() const { return params_.count(); }
  const ParamInfo &param(int index) const { return params_.at(index); }
  // Valid while the engine lives (zrt_param_info's name).
  const char *param_name(int index) const {
    params_.at(index);
    return params_.c_name(index);
  }

  int register_param(const char *name, zrt_dtype_t dtype, int ndim, const int64_t *shape);
  void commit();  // collective
  void set_param(int index, const void *values, zrt_dtype_t dtype);
  void get_param(int index, void *values, zrt_dtype_t dtype);  // collective
  void *param_data(int index);
  void *grad_data(int index);
  // zrt_param_grad_buffer: *overwrite says whether the program overwrites (or adds).
  void *grad_buffer(int index, bool *overwrite);
  void grad_ready(int index);
  // check runs on every rank before anything else, agreed: a bad report struct on one rank
  // fails the step on every rank before any collective. Collective.
  StepReport step(const std::function<void()> &check = {});
  void gather(int index);  // collective (stage 3)
  void release(int index);
  void set_lr(double lr);
  void set_stream(void *stream) { memory_->set_program_stream(stream); }
  bool on_device() const { return memory_->on_device(); }
  // What the engine's communicator chose and did (zrt_engine_describe's "comm").
  void describe_comm(nlohmann::json &out) const { comm_->describe(out); }
  // The ranks mapping the engine's node-shared window; 0: it has none.
  int memory_shared_ranks() const { return memory_->shared_peers(); }
  // How every rank gets the updated parameters (zrt_engine_describe's param_gather):
  // "owners_write" (param_push.hpp), "all_gather" (stages 1-2), "on_use" (stage 3), "none".
  const char *param_gather() const {
    return push_                      ? "owners_write"
           : stage_.gather_after_step ? "all_gather"
           : stage_.gather_on_use     ? "on_use"
                                      : "none";
  }
  // Buffers meant for that window that went to host memory (it was full).
  uint64_t memory_shared_fallbacks() const { return memory_->shared_fallbacks(); }
  // Overrides the engine's weight decay for one parameter (biases, norms: often 0).
  void set_weight_decay(int index, double weight_decay);
  double loss_scale() const { return scaler_.scale(); }
  MemoryReport memory() const;

  std::vector<uintptr_t> param_handles;  // for the C API: handle of each parameter

  // --- for checkpoints (optim/checkpoint/) ---
  // A contiguous run of one parameter held by this rank: its fp32 master weights and
  // optimizer moments, and where the run starts inside the parameter.
  struct StatePiece {
    int param;
    int owner;
    size_t param_offset;  // first element of the run within the parameter
    size_t count;
    float *master, *m, *v;  // m and v may be null (SGD without momentum: both)
    bool on_device;         // master, m and v are device memory (copy_state moves them)
  };
  std::vector<StatePiece> state_pieces() const;
  MPI_Comm control_comm() const { return control_; }
  // HDF5 keeps a file open on control_ (a save whose close failed): control_ is then left
  // for MPI_Finalize instead of freed.
  void keep_control_comm() { keep_control_ = true; }
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  int64_t step_count() const { return step_; }
  // The rate of the next update: the scheduler's at this step count, or the program's.
  double lr() const { return scheduler_ ? scheduler_->lr(step_) : lr_; }
  // Moves bytes between device state (StatePiece::on_device) and host memory, and returns
  // when they have arrived.
  void copy_state(void *dst, const void *src, size_t bytes);
  bool has_m() const { return state_.has_m(); }
  bool has_v() const { return state_.has_v(); }
  const LossScaler &scaler() const { return scaler_; }
  // Throws Error(ZRT_ERR_INVALID_STATE) unless the engine is committed and between steps.
  void require_between_steps(const char *what) const;
  // A load failed after some of the file's state landed: the engine refuses to step or save
  // (require_complete_state) until a load succeeds (finish_load) or every parameter is set
  // (set_param). why says what happened, for the refusal's message. Local; a failed load
  // marks every rank.
  void mark_state_incomplete(std::string why);
  // Throws Error(ZRT_ERR_INVALID_STATE), naming what and why, while the state is incomplete.
  void require_complete_state(const char *what) const;
  // After the master weights and moments were overwritten: refresh the compute copies
  // (gathering them at stages 1 and 2), clear gradients, and take the saved step and scale.
  void finish_load(int64_t step, const LossScaler::State &scaler);  // collective
  // Host memory for a checkpoint's copy of this rank's state: pinned, from the engine's
  // pinned pool, so that device state copies into it at the link's speed. Not zeroed.
  EngineBuffer checkpoint_staging(size_t bytes);
  // The save writing in the background, if any (one at a time); the step settles it first.
  void set_pending_save(std::shared_ptr<PendingSave> save) { pending_save_ = std::move(save); }
  bool save_pending() const { return pending_save_ != nullptr; }
  // Collective: settles the pending save (wait: until it is published, its copy of the state
  // taken). Throws its failure.
  void settle_save(bool wait);
  // Local: returns once a pending save no longer reads the state (before a local change).
  void wait_for_snapshot() const {
    if (pending_save_) pending_save_->wait_for_snapshot();
  }

 private:
  void require_committed(const char *what) const;
  void validate_ready(const std::function<void()> &check);
  void commit_agreed();
  // The parts made at commit, in the order their users need (speculative_ uses optimizer_,
  // the reducer's hooks speculative_).
  void reset_parts();
  // Restores the state a CPU step run during backward changed (before the state is read or
  // written between backward and the step). Local.
  void undo_speculation();
  // What an update made now depends on (SpeculativeStep::Key), for the step's grad scale.
  SpeculativeStep::Key update_key(double unscale) const;
  // After the optimizer changed the weights, every rank's parameters: the all-gather,
  // or with pushed (the optimizer wrote them into the peers' buffers, param_push.hpp)
  // the barrier that ends it.
  void refresh_params(bool pushed = false);
  // Collective: the node-shared window for the collectives' buffers, when the settings and
  // the backend call for one (engine.shared_buffers).
  void share_buffers();
  // The ranks of the node-shared window the engine has or will make at commit; 0: none.
  int window_ranks() const;

  Context &context_;
  EngineSettings settings_;
  StageLayout stage_;
  std::unique_ptr<Communicator> comm_;
  CommStats comm_stats_;  // of the collectives since the last step report
  MpiComm control_;       // the engine's own agreements, never mixed with data
  std::unique_ptr<AgreementWatch> control_watch_;  // their deadlines (comm.timeout)
  int rank_ = 0, nranks_ = 1;
  const KernelTable *kernels_ = nullptr;
  ThreadPool *threads_ = nullptr;  // the context's (EnginePart)
  std::unique_ptr<EngineMemory> memory_;
  LossScaler scaler_;

  ParamRegistry params_;
  bool committed_ = false;
  // Set-up is collective at commit. A zrt_param_register that failed here is remembered:
  // a program that gives up and destroys the engine before its commit makes the other
  // ranks' commits fail with this message instead of leaving them waiting (a program that
  // corrects the call and commits is not affected).
  std::string setup_error_;
  bool commit_failed_ = false;  // agreed: every rank's commit failed
  bool keep_control_ = false;   // keep_control_comm()
  Layout layout_;
  ModelState state_;
  std::unique_ptr<GradientReducer> reducer_;
  std::unique_ptr<ParamGatherer> gatherer_;  // stage 3 only
  std::unique_ptr<ParamPush> push_;          // stages 1-2 on one node (param_push.hpp), or null
  std::unique_ptr<OptimizerStep> optimizer_;
  std::unique_ptr<SpeculativeStep> speculative_;  // engine.offload_step during_backward
  // Its back-off after redone steps: consecutive redos, the first step it speculates
  // again, and the next pause's length.
  int redo_streak_ = 0;
  int64_t speculate_from_ = 0, redo_pause_ = 1;
  std::shared_ptr<PendingSave> pending_save_;
  // Parameters not set since a failed load (mark_state_incomplete); empty when none.
  std::vector<uint8_t> incomplete_;
  std::string incomplete_why_;
  int64_t step_ = 0;
  int64_t skipped_steps_ = 0;  // for non-finite gradients, this engine's life
  double lr_ = 0;
  std::optional<LrScheduler> scheduler_;  // scheduler.type; sets the rate of each update
};

}  // namespace zrt
