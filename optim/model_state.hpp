// This rank's model states: the buffers the stage layout names (stage_layout.hpp), in the
// places the engine's memory gives them (engine_memory.hpp), and the typed views of them
// that the optimizer, the gradient reducer and the parameter gathers use.
//
//                      host engine     device engine     device engine, ZeRO-Offload
//   parameters         host            device            device
//   master, moments    host (pinned    device            pinned host
//                      with offload)
//   gradients          host            device            stages 0-1: device (full), and
//                                                        a pinned host shard; 2-3: only
//                                                        the pinned host shard
// With ZeRO-Offload on the device the optimizer runs on the host, so it keeps fp32 weights
// there even when the compute dtype is fp32 (the master weights are then a copy of the
// parameters' shard), and the reduced gradients travel to the host shard bucket by bucket.
// With parameter offload (stage 3) the parameters' shard is pinned host memory as well, and
// goes to the device piece by piece as it is gathered. When the CPU step runs during
// backward (speculates(), optimizer_step.hpp), a host copy of the shard's fp32 weights and
// moments is kept to redo it from, and the updated compute-dtype shard is staged in pinned
// memory until the step commits.
#pragma once

#include <cstddef>
#include <vector>

#include "optim/engine_memory.hpp"
#include "optim/engine_settings.hpp"
#include "optim/kernels/kernels.hpp"
#include "optim/stage_layout.hpp"

namespace zrt {

class ModelState {
 public:
  ModelState() = default;
  // Zeroed buffers for every model state the stage holds. Throws Error (out of memory, with
  // the pool's stats). Local.
  ModelState(EngineMemory &memory, const StageLayout &stage, const Layout &layout,
             const EngineSettings &settings);
  // Host engine: the bytes of each buffer the constructor asks node-shared memory for,
  // those the collectives read in place: the parameters where they are all-gathered
  // (stages 1-3) and the gradients (reduced from, or into).
  static std::vector<size_t> shared_buffers(const StageLayout &stage, const Layout &layout,
                                            const EngineSettings &settings);

  // The buffers the constructor makes, by kind, with the place it asks for and their bytes:
  // what the engine allocates and what a plan (engine_plan.hpp) counts, from one list.
  enum class Kind { Params, Master, M, V, Grads, HostGrads, Saved, Staging };
  struct Planned {
    Kind kind;
    Place place;
    size_t bytes;
  };
  static std::vector<Planned> plan(const StageLayout &stage, const Layout &layout,
                                   const EngineSettings &settings, bool device);
  // Whether the optimizer's CPU step runs during backward (engine.offload_step
  // during_backward, ZeRO-Offload on the device, not LAMB).
  static bool speculates(const EngineSettings &settings, bool device);

  // Compute-dtype parameters; element is an index in a buffer of the parameters' extent.
  char *params(size_t element) const { return params_.bytes() + element * esize_; }
  // Compute-dtype gradients, by index in a buffer of the gradients' extent (none on an
  // offloaded device engine at stages 2-3).
  char *grads(size_t element) const { return grads_.bytes() + element * esize_; }
  // The host shard of the gradient (offload_to_host()), by index in the shard.
  char *host_grads(size_t element) const { return host_grads_.bytes() + element * esize_; }
  // The fp32 weights the optimizer updates (the master weights, or the parameters when
  // they are fp32 and stay where the optimizer runs), by index in a buffer of their extent.
  float *weights(size_t element) const {
    return (separate_weights_ ? master_.data<float>() : params_.data<float>()) + element;
  }
  Extent weights_extent() const { return separate_weights_ ? stage_.state : stage_.params; }

  // Everything the optimizer kernels need for one owned range.
  OptimRange range(const OwnedRange &o) const;
  // speculates(): the saved copy of an owned range's weights and moments (its m and v
  // null where the range has none), and where the updated compute-dtype values are staged
  // (mixed precision only; null otherwise).
  OptimRange saved(const OwnedRange &o) const;
  char *staging(const OwnedRange &o) const {
    return staging_.empty() ? nullptr : staging_.bytes() + o.state * esize_;
  }
  bool has_m() const { return !m_.empty(); }
  bool has_v() const { return !v_.empty(); }
  // Where each kind lives.
  Place params_place() const { return params_.place(); }
  Place state_place() const { return state_place_; }
  // ZeRO-Offload on the device: the optimizer runs on the host over host_grads, and the
  // parameters it updates are copied back (its compute copies are not written in place).
  bool offload_to_host() const { return offload_device_; }
  bool has_device_grads() const { return !grads_.empty(); }
  // Parameter offload: the parameters' shard is in pinned host memory.
  bool params_on_host() const { return params_.place() == Place::Pinned; }

  // Zeroes every gradient buffer (in the engine's stream order on the device).
  void zero_grads(EngineMemory &memory);

  // The parameters, and the speculative step's staged update of them.
  size_t params_bytes() const { return params_.size() + staging_.size(); }
  size_t grads_bytes() const { return grads_.size() + host_grads_.size(); }
  size_t master_bytes() const { return master_.size(); }
  // The moments, and the speculative step's saved copy of the weights and moments.
  size_t moments_bytes() const { return m_.size() + v_.size() + saved_.size(); }
  // Bytes of every model state in device memory, and in host memory.
  size_t device_bytes() const;
  size_t host_bytes() const;
  size_t shared_bytes() const;  // of host_bytes(), in node-shared memory

 private:
  StageLayout stage_;
  zrt_dtype_t dtype_ = ZRT_DTYPE_FP32;
  size_t esize_ = 4;
  bool mixed_ = false;
  bool separate_weights_ = false;
  bool offload_device_ = false;
  Place state_place_ = Place::Host;
  EngineBuffer params_, master_, m_, v_, grads_, host_grads_, saved_, staging_;
  size_t state_elements_ = 0;  // of each state buffer (the saved copy's stride)
};

}  // namespace zrt
