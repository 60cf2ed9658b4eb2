// This rank's model states: the buffers the stage layout names (stage_layout.hpp), taken
// from the context's host pool, and the typed views of them that the optimizer, the
// gradient reducer and the parameter gathers use. Parameters, master weights, moments and
// the gradient buffer are long-lived and raw: their addresses reach the program
// (zrt_param_data, zrt_grad_data) and MPI.
#pragma once

#include <cstddef>

#include "optim/engine_settings.hpp"
#include "optim/host_buffer.hpp"
#include "optim/kernels/kernels.hpp"
#include "optim/stage_layout.hpp"

namespace zrt {

class ModelState {
 public:
  ModelState() = default;
  // Zeroed buffers for every model state the stage holds. Throws Error (out of memory, with
  // the pool's stats). Local.
  ModelState(Pool &pool, const StageLayout &stage, const Layout &layout,
             const EngineSettings &settings);

  // Compute-dtype parameters; element is an index in a buffer of the parameters' extent.
  char *params(size_t element) const { return params_.bytes() + element * esize_; }
  // Compute-dtype gradients, by index in a buffer of the gradients' extent.
  char *grads(size_t element) const { return grads_.bytes() + element * esize_; }
  // The fp32 weights the optimizer updates (the master weights, or the parameters when they
  // are fp32), by index in a buffer of their extent.
  float *weights(size_t element) const {
    return (mixed_ ? master_.data<float>() : params_.data<float>()) + element;
  }
  Extent weights_extent() const { return stage_.weights(mixed_); }

  // Everything the optimizer kernels need for one owned range.
  OptimRange range(const OwnedRange &o) const;
  bool has_m() const { return !m_.empty(); }
  bool has_v() const { return !v_.empty(); }
  void zero_grads() { grads_.zero(); }

  size_t params_bytes() const { return params_.size(); }
  size_t grads_bytes() const { return grads_.size(); }
  size_t master_bytes() const { return master_.size(); }
  size_t moments_bytes() const { return m_.size() + v_.size(); }

 private:
  StageLayout stage_;
  zrt_dtype_t dtype_ = ZRT_DTYPE_FP32;
  size_t esize_ = 4;
  bool mixed_ = false;
  HostBuffer params_, master_, m_, v_, grads_;
};

}  // namespace zrt
