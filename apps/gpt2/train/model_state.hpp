// The model states (ZeRO's term: parameters, gradients, optimizer state) behind the
// trainer. The trainer only sees this interface, so swapping the temporary in-app AdamW
// for zerort's engine is one new implementation of it:
//
//   ModelState              zerort engine (engine.h)
//   store()                 a ParameterStore over zrt_param_data / zrt_grad_data /
//                           zrt_grad_ready / zrt_param_gather / zrt_param_release
//   begin_micro_step(k)     nothing (the engine counts micro-steps itself)
//   step(lr)                zrt_engine_set_lr(lr); zrt_engine_step(&report)
//   memory()                zrt_engine_memory
#pragma once

#include <cstdint>
#include <string>

#include "model/parameter_store.hpp"

namespace gpt2 {

struct OptimizerConfig {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;   // decoupled (AdamW); matrices and embeddings only
  double grad_clip = 1.0;      // global L2 norm; 0 = off
  int accumulation_steps = 1;  // micro-steps per optimizer step
};

struct StepReport {
  bool applied = true;   // false if the step was skipped (fp16 overflow)
  double grad_norm = 0;  // global norm before clipping
};

/// Bytes of model state this rank holds, by kind (as zrt_memory_report_t).
struct StateMemory {
  int64_t parameters = 0, gradients = 0, optimizer_state = 0, buckets = 0;
  int64_t total() const { return parameters + gradients + optimizer_state + buckets; }
};

class ModelState {
 public:
  virtual ~ModelState() = default;
  /// Where the model finds its parameters and gradients.
  virtual ParameterStore<float> &store() = 0;
  /// Before the backward of micro-step @p k (0 .. accumulation_steps-1).
  virtual void begin_micro_step(int k) = 0;
  /// After the last micro-step's backward: reduce gradients over the ranks, clip, and
  /// update the parameters with learning rate @p lr. Collective.
  virtual StepReport step(double lr) = 0;
  virtual StateMemory memory() const = 0;
  /// One line for the log: what holds the model states, e.g. "in-app AdamW, ...".
  virtual std::string describe() const = 0;
};

}  // namespace gpt2
