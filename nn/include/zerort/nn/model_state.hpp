// The model states (ZeRO's term: parameters, gradients, optimizer state) behind the
// trainer. The trainer only sees this interface; zerort's engine implements it
// (train/engine_model_state.hpp), and tests wrap it:
//
//   ModelState              zerort engine (engine.h)
//   store()                 a ParameterStore over zrt_param_data / zrt_param_grad_data /
//                           zrt_param_grad_ready / zrt_param_gather / zrt_param_release
//   loss_scale()            zrt_engine_loss_scale (1 unless fp16)
//   begin_step(lr)          zrt_engine_set_lr(lr) before the step's micro-steps
//   step(lr)                zrt_engine_set_lr(lr) (unless the engine's scheduler sets the
//                           rate: no lr); zrt_engine_step(&report), after every micro-step
//                           (the engine counts them and updates on the last)
//   memory()                zrt_engine_memory
//   save(path, metadata)    zrt_checkpoint_save, or zrt_checkpoint_save_post (background)
//   load(path)              zrt_checkpoint_load
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <zerort/checkpoint.h>
#include <zerort/context.h>
#include <zerort/engine.h>

#include <zerort/nn/parameter_store.hpp>

namespace zrt::nn {

/// A zerort call that failed: its status and (what()) zerort's message. What the model
/// states throw, so that a caller can hand the status on (zrt_model_* do).
struct StatusError : std::runtime_error {
  StatusError(zrt_status_t s, const std::string &message)
      : std::runtime_error(message), status(s) {}
  zrt_status_t status;
};

struct OptimizerConfig {
  zrt_optimizer_t kind = ZRT_OPTIMIZER_ADAMW;  // AdamW (GPT-2) or LAMB (BERT)
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;   // decoupled (AdamW, LAMB); matrices and embeddings only
  double grad_clip = 1.0;      // global L2 norm; 0 = off
  int accumulation_steps = 1;  // micro-steps per optimizer step
};

// The engine's collectives during one call of step (zrt_step_report_t's comm_* fields):
// the time the program waited on them, and the bytes of each kind.
struct CommFigures {
  double wait_seconds = 0;
  int64_t reduce_scatter_bytes = 0, all_gather_bytes = 0, all_reduce_bytes = 0;
  // The micro-steps of one optimizer step, summed.
  CommFigures &operator+=(const CommFigures &o) {
    wait_seconds += o.wait_seconds;
    reduce_scatter_bytes += o.reduce_scatter_bytes;
    all_gather_bytes += o.all_gather_bytes;
    all_reduce_bytes += o.all_reduce_bytes;
    return *this;
  }
};

struct StepReport {
  bool applied = false;         // the optimizer ran: last micro-step, and no overflow
  bool skipped = false;         // an overflow (fp16) or a non-finite gradient skipped the update
  double grad_norm = 0;         // global norm before clipping (meaningful when the update ran)
  int64_t optimizer_steps = 0;  // updates applied so far
  CommFigures comm;             // of this call (a store without collectives: zeros)
  double lr = 0;                // the rate of this call's update (or of the next one)
  // ZeRO-Offload on the device (zeros otherwise): the copies between device and host and
  // the CPU's update in the call that applied or skipped the update, and of each the time
  // the step waited (zrt_step_report_t's offload_* fields).
  double offload_copy_seconds = 0, offload_copy_exposed_seconds = 0;
  double offload_cpu_seconds = 0, offload_cpu_exposed_seconds = 0;
};

/// Bytes of model state this rank holds, by kind (as zrt_memory_report_t).
struct StateMemory {
  int64_t parameters = 0, gradients = 0, master_weights = 0, optimizer_state = 0, buckets = 0;
  int64_t node_shared_bytes = 0;  // of the total, in the engine's node-shared window
  int64_t total() const {
    return parameters + gradients + master_weights + optimizer_state + buckets;
  }
};

class ModelState {
 public:
  virtual ~ModelState() = default;
  /// Where the model finds its parameters and gradients.
  virtual ParameterStore<float> &store() = 0;
  /// What backward multiplies the loss's gradient by (the fp16 loss scale; 1 otherwise).
  /// Gradients are summed over micro-steps and averaged over ranks by the state itself:
  /// backward must not divide by the accumulation steps.
  virtual double loss_scale() const = 0;
  /// After each micro-step's backward. On the last micro-step of an accumulation: reduce
  /// gradients over the ranks, clip, and update the parameters with learning rate @p lr, or
  /// without one at the rate of the state's own schedule (the engine's scheduler).
  /// Collective.
  virtual StepReport step(std::optional<double> lr) = 0;
  /// Before an optimizer step's micro-steps: the rate @p lr its update will run at (as step
  /// will be given), so that an update the state starts during backward uses it (ZeRO-
  /// Offload's CPU step, engine.offload_step during_backward, which a rate changed after
  /// backward makes redo). Local.
  virtual void begin_step(std::optional<double> lr) { (void)lr; }
  virtual StateMemory memory() const = 0;
  /// What stage 0 (full model states on every rank) would hold instead of memory(), for
  /// comparison: 16 bytes a parameter with Adam.
  virtual int64_t stage0_bytes() const = 0;
  /// Writes the model states and @p metadata (JSON text, the trainer's own state) to the
  /// HDF5 checkpoint @p path, atomically. Collective, between optimizer steps. background:
  /// return once the states are copied and write while training goes on (a failed write
  /// is thrown by a later step or save); a save waits for the one before.
  virtual void save(const std::string &path, const std::string &metadata,
                    bool background = false) = 0;
  /// Replaces the model states (parameters, optimizer state, step) with those of @p path.
  /// Collective; on failure the states are left as they were.
  virtual void load(const std::string &path) = 0;
  /// One line for the log: what holds the model states, e.g. "zerort engine, stage 2, ...".
  virtual std::string describe() const = 0;
};

}  // namespace zrt::nn
