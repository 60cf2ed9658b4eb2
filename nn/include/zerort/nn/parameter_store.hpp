// Where the model's parameters and gradients live. The model never owns them: it asks the
// store for each tensor's values before using it and for gradient memory before writing
// it, and tells the store as soon as a gradient is complete. Two implementations:
//   LocalParameterStore  one contiguous buffer each for values and gradients (llm.c style);
//                        the temporary single-program path, and the tests' reference.
//   the engine's store   values and gradients in zerort's engine (zrt_param_data,
//                        zrt_param_grad_data, zrt_param_grad_ready), any ZeRO stage: the calls
//                        below map one to one onto engine.h.
#pragma once

#include <vector>

#include "tensor_spec.hpp"

namespace zrt::nn {

/// Gradient memory for one tensor (its shape, in the execution space's memory).
template <class T>
struct GradBuffer {
  T *data = nullptr;
  /// True when @p data holds a partial sum that backward must add to (gradient
  /// accumulation over micro-steps kept in place); false when its contents are undefined
  /// and backward overwrites them.
  bool accumulate = false;
};

/// The beta of a gradient's first write in backward: 1 adds to the partial sum, 0
/// overwrites (the layers' beta_param arguments).
template <class T>
T beta_of(const GradBuffer<T> &g) {
  return g.accumulate ? T(1) : T(0);
}

template <class T>
class ParameterStore {
 public:
  virtual ~ParameterStore() = default;

  /// The tensors, in registration order (the model's layout); ids index this list.
  virtual const std::vector<TensorSpec> &tensors() const = 0;

  /// Set tensor @p id's full value from host memory; every rank passes the same values.
  /// Engine: zrt_param_set.
  virtual void set(int id, const T *host_values) = 0;
  /// Copy tensor @p id's full value to host memory. Engine: zrt_param_get (collective at
  /// stages 1-3: every rank must call it, in the same order).
  virtual void get(int id, T *host_values) = 0;

  /// Make tensor @p id's values available until release(). Called in the same order on
  /// every rank, in forward and again in backward. Engine: zrt_param_gather (stage 3
  /// assembles the shards; other stages do nothing).
  virtual void gather(int /*id*/) {}
  /// The values of @p id are not needed until the next gather(). Engine: zrt_param_release.
  virtual void release(int /*id*/) {}
  /// Tensor @p id's values, valid between gather() and release(). Engine: zrt_param_data.
  virtual T *values(int id) = 0;

  /// Where backward writes tensor @p id's gradient; valid until grad_ready(id). Backward
  /// asks right before its first write (wte's is held from the LM head to the embedding,
  /// the whole backward, because the two share it). Engine: zrt_param_grad_buffer (which
  /// says whether backward overwrites a fresh buffer or adds to a partial sum).
  virtual GradBuffer<T> grad(int id) = 0;
  /// Tensor @p id's gradient is complete; called once per tensor per backward, layer by
  /// layer as backward goes, so reductions can overlap the rest of backward. Engine:
  /// zrt_param_grad_ready.
  virtual void grad_ready(int id) = 0;
};

}  // namespace zrt::nn
