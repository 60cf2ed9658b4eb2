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
//
// Partial offload (zero_optimization.offload_optimizer.ratio below 1) splits the shard's
// optimizer state at a bucket boundary: the state of the first buckets reduced in backward
// (the end of the shard, elements from host_begin() on) is offloaded as above, and the
// rest stays on the device as without offload, with a device shard of its gradients.
// Every owned range lies in one part (offloaded(o)), so the optimizer takes each range
// where its state is.
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
  // The first shard element whose optimizer state is offloaded: 0 (all) with ratio 1; the
  // start of the first-reduced buckets' slices holding at least the ratio of the state
  // otherwise; the shard's end without offload. The same on every rank.
  static size_t offload_begin(const StageLayout &stage, const Layout &layout,
                              const EngineSettings &settings, bool device);

  // Compute-dtype parameters; element is an index in a buffer of the parameters' extent.
  char *params(size_t element) const { return params_.bytes() + element * esize_; }
  // Compute-dtype gradients, by index in a buffer of the gradients' extent (on an
  // offloaded device engine at stages 2-3: none, or with partial offload only the shard's
  // elements before host_begin()).
  char *grads(size_t element) const { return grads_.bytes() + element * esize_; }
  // The host shard of the gradient (offload_to_host()), by index in the shard (from
  // host_begin() on).
  char *host_grads(size_t element) const {
    return host_grads_.bytes() + (element - host_begin_) * esize_;
  }
  // Everything the optimizer kernels need for one owned range: its fp32 weights (the master
  // weights, or the parameters when they are fp32 and stay where the optimizer runs), its
  // moments, its gradient, and the compute copy the kernels write (if any).
  OptimRange range(const OwnedRange &o) const;
  // Whether the range's optimizer state is offloaded (updated on the CPU from host_grads).
  bool offloaded(const OwnedRange &o) const { return offload_device_ && o.state >= host_begin_; }
  // Where the range's fp32 weights and moments live.
  Place state_place(const OwnedRange &o) const {
    return offloaded(o) ? Place::Pinned : offload_device_ ? Place::Device : state_place_;
  }
  size_t host_begin() const { return host_begin_; }
  // speculates(): the saved copy of an owned range's weights and moments (its m and v
  // null where the range has none), and where the updated compute-dtype values are staged
  // (mixed precision only; null otherwise).
  OptimRange saved(const OwnedRange &o) const;
  char *staging(const OwnedRange &o) const {
    return staging_.empty() ? nullptr : staging_.bytes() + (o.state - host_begin_) * esize_;
  }
  bool has_m() const { return !m_.empty(); }
  bool has_v() const { return !v_.empty(); }
  // Where the parameters live.
  Place params_place() const { return params_.place(); }
  // ZeRO-Offload on the device: the optimizer runs on the host over host_grads for the
  // offloaded ranges, and the parameters it updates are copied back (its compute copies are
  // not written in place).
  bool offload_to_host() const { return offload_device_; }
  // Partial offload: some ranges' state is on the device.
  bool partial() const { return offload_device_ && host_begin_ > 0; }
  bool has_device_grads() const { return !grads_.empty(); }
  // Parameter offload: the parameters' shard is in pinned host memory.
  bool params_on_host() const { return params_.place() == Place::Pinned; }

  // Zeroes every gradient buffer (in the engine's stream order on the device).
  void zero_grads(EngineMemory &memory);

  // The parameters, and the speculative step's staged update of them.
  size_t params_bytes() const { return params_.size() + staging_.size(); }
  size_t grads_bytes() const { return grads_.size() + host_grads_.size(); }
  size_t master_bytes() const { return master_.size() + device_master_.size(); }
  // The moments, and the speculative step's saved copy of the weights and moments.
  size_t moments_bytes() const {
    return m_.size() + v_.size() + device_m_.size() + device_v_.size() + saved_.size();
  }
  // Bytes of every model state in device memory, and in host memory.
  size_t device_bytes() const;
  size_t host_bytes() const;
  size_t shared_bytes() const;  // of host_bytes(), in node-shared memory

 private:
  StageLayout stage_;
  zrt_dtype_t dtype_ = ZRT_DTYPE_FP32;
  size_t esize_ = 4;
  bool mixed_ = false;
  bool offload_device_ = false;
  Place state_place_ = Place::Host;
  // Offloaded: master_, m_, v_ hold shard elements [host_begin_, end) and device_*
  // (partial offload) those before; otherwise master_, m_, v_ hold all of the state's
  // extent.
  EngineBuffer params_, master_, m_, v_, device_master_, device_m_, device_v_, grads_, host_grads_,
      saved_, staging_;
  size_t state_elements_ = 0;  // in the state's extent
  size_t host_begin_ = 0;      // the first offloaded element (offload_begin())
  std::vector<const EngineBuffer *> buffers() const;
};

}  // namespace zrt
