// The optimizer's part of zrt_engine_step on this rank's owned ranges (stage_layout.hpp):
// the overflow check, the global gradient norm, and SGD, Adam/AdamW or LAMB on the
// vectorized kernels (kernels/), spread over the context's optimizer threads.
//
// Everything that crosses ranks (the overflow flag, norm partials, LAMB's per-parameter
// norms) travels on the engine's control communicator, never mixed with data, and is summed
// per (bucket, slice owner) and then in a fixed order, so every stage computes the same
// values bit for bit.
//
// On the device (optimizer not offloaded) the kernels are the device's
// (kernels/device_kernels.hpp), on the engine's stream, one per range (the device needs no
// thread split), and the sums the host needs come back through the stream. With
// ZeRO-Offload the CPU kernels run here over the pinned state and the host shard of the
// gradient, and copy_back() takes the updated parameters to the device.
#pragma once

#include <mpi.h>

#include <functional>
#include <utility>
#include <vector>

#include "optim/engine_memory.hpp"
#include "optim/engine_settings.hpp"
#include "optim/kernels/kernels.hpp"
#include "optim/kernels/thread_pool.hpp"
#include "optim/model_state.hpp"
#include "optim/param_push.hpp"
#include "optim/param_registry.hpp"

namespace zrt {

class OptimizerStep {
 public:
  // All references must outlive this object. Local.
  OptimizerStep(const EngineSettings &settings, const KernelTable &kernels, ThreadPool &threads,
                MPI_Comm control, EngineMemory &memory, const Layout &layout,
                const StageLayout &stage, ModelState &state, const ParamRegistry &params, int rank);

  // True when a gradient on any rank is inf or NaN. Collective over control. `local`,
  // when given, is this rank's answer for the ranges the host updates, already known (the
  // speculative step's); the device's ranges are checked here.
  bool overflow(const bool *local = nullptr) const;
  // The squared L2 norm of the (scaled) gradient over all ranks. Collective over control
  // unless this rank updates everything (stage 0). `range_sums`, when given, are the
  // sums of the ranges the host updates already computed (range_sum_squares, in owned()
  // order; the device's ranges' entries are not read).
  double grad_norm_squared(const std::vector<double> *range_sums = nullptr) const;
  // On the host: an owned range's sum of squared gradients, over fixed blocks added in
  // order (what grad_norm_squared adds), and whether it holds an inf or NaN. On the threads.
  double range_sum_squares(size_t owned_index) const;
  bool range_non_finite(size_t owned_index) const;

  // One update (SGD, Adam, AdamW; not LAMB) on the host, for update_range, or on the device
  // (on the engine's stream).
  using RangeKernel = std::function<void(int param, const OptimRange &)>;
  RangeKernel host_kernel(float grad_scale, double lr, int64_t step) const;
  RangeKernel device_kernel(float grad_scale, double lr, int64_t step) const;
  // Runs kernel over the owned range r (state_.range of owned()[owned_index], possibly with
  // its compute copy redirected), parameter by parameter where weight decays differ, on
  // the threads. The result is run()'s for that range, bit for bit.
  void update_range(size_t owned_index, const OptimRange &r, const RangeKernel &kernel) const;
  // ZeRO-Offload: an owned range's updated parameters to where the program reads them,
  // from `from` (compute-dtype values of the range) or, when null, converted from the fp32
  // weights on the way.
  void copy_back(const OwnedRange &o, const void *from = nullptr);
  // Updates the owned ranges with gradients multiplied by grad_scale; `step` is the number
  // of steps applied before this one. Collective over control for LAMB. With ZeRO-Offload
  // each updated range is copied back to the device as it finishes. device_only: only the
  // ranges on the device (a partial offload's, after a committed CPU step during backward).
  void run(float grad_scale, double lr, int64_t step, bool device_only = false);
  // The compute-dtype parameters from the fp32 weights where the optimizer does not write
  // them itself: with ZeRO-Offload, waits for run()'s copies back to the device; every
  // compute copy after a checkpoint load (all = true). On the engine's stream on the device.
  void refresh_compute_copies(bool all);
  // From here on, the host's updates of the fp32 parameters go to the peers too, a piece at
  // a time (param_push.hpp); nullptr stops it. The push outlives the optimizer's runs.
  void set_push(const ParamPush *push) { push_ = push; }
  // Whether the host updates every owned range's fp32 weights inside [base, base + bytes)
  // (where a push may copy them from). Local.
  bool updates_within(const char *base, size_t bytes) const;

  // A parameter's part of an owned range.
  struct Piece {
    int param, owner;
    size_t param_offset;  // where the piece starts inside the parameter
    OptimRange range;
    bool on_device;  // its weights and moments are in device memory
  };
  std::vector<Piece> param_pieces() const { return param_pieces(owned_); }
  const std::vector<OwnedRange> &owned() const { return owned_; }
  // Whether the device updates owned range o (a device engine's state not offloaded).
  bool runs_on_device(const OwnedRange &o) const;

 private:
  OptimRange sub_range(const OptimRange &r, size_t begin, size_t count) const;
  // update(r), or with a push update() of each ParamPush::kPiece elements then its push.
  void update_and_push(const OptimRange &r,
                       const std::function<void(const OptimRange &)> &update) const;
  std::vector<Piece> param_pieces(const std::vector<OwnedRange> &ranges) const;
  RangeKernel make_kernel(float grad_scale, double lr, int64_t step, bool device) const;
  // Runs kernel(param, range) over the owned ranges given, on the threads; param is -1 when
  // every parameter has the engine's weight decay.
  // done(range), when given, runs once a range is updated (at the end with per-parameter decay).
  void for_each_range(const std::vector<OwnedRange> &ranges,
                      const std::function<void(int, const OptimRange &)> &kernel,
                      const std::function<void(const OwnedRange &)> &done = nullptr) const;
  void run_lamb(const AdamStep &base, double lr) const;
  // lr times LAMB's trust ratio from a parameter's sums of squares of weights and update.
  static float lamb_rate(double w_sq, double u_sq, double lr);
  void run_lamb_on_device(const AdamStep &base, double lr) const;
  // LAMB, host and device alike: base with param's weight decay, and each parameter's
  // learning rate times its trust ratio from the pieces' (|w|^2, |update|^2) sums.
  AdamStep lamb_step(const AdamStep &base, int param) const;
  std::vector<float> lamb_rates(const std::vector<Piece> &pieces,
                                const std::vector<std::pair<double, double>> &piece_sums,
                                double lr) const;
  // for_each_range on the device's ranges: a kernel per owned range, or per piece with
  // per-parameter weight decay, on the engine's stream.
  void for_each_range_on_device(const std::function<void(int, const OptimRange &)> &kernel) const;
  std::vector<double> gather_partials(const std::vector<double> &mine, size_t per_rank) const;

  const EngineSettings &settings_;
  const KernelTable &kernels_;
  ThreadPool &threads_;
  const ParamPush *push_ = nullptr;
  MPI_Comm control_;
  EngineMemory &memory_;
  const bool on_device_;  // the device runs all the kernels (not offloaded)
  const Layout &layout_;
  const StageLayout stage_;
  ModelState &state_;
  const ParamRegistry &params_;
  const int rank_, nranks_;
  const size_t esize_;
  std::vector<OwnedRange> owned_;
  // owned_ split by where they are updated (runs_on_device), in owned_'s order.
  std::vector<OwnedRange> device_ranges_, host_ranges_;
};

}  // namespace zrt
