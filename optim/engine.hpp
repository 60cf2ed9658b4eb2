// The object behind zrt_engine_h: ZeRO stages 0-3 over one flat parameter layout.
//
// Storage per rank (P parameters, N ranks, see layout.hpp for slices and shards):
//   params_   compute dtype; stages 0-2 the full flat buffer, stage 3 this rank's shard
//   master_   fp32 master weights when the compute dtype is 16-bit; stage 0 full, 1-3 shard
//             (with fp32 compute, params_ is the master copy)
//   m_, v_    optimizer state; stage 0 full, 1-3 shard
//   grads_    stages 0-1 the full gradient buffer; stages 2-3 this rank's shard of the
//             reduced gradient
//   buckets   stages 2-3: bucket buffers that backward writes into (two, plus one for a
//             parameter cut into several buckets, or more while backward runs ahead of the
//             reductions), one per group of buckets (layout.hpp); stage 1: slice buffers
//             the reduce-scatter lands in; stage 3: gathered parameter groups
//
// The optimizer runs over "owned ranges": (bucket, slice owner) pairs, every pair at stage 0
// and this rank's slices otherwise. Norms and LAMB trust ratios are summed per owned range
// and then over ranges in a fixed order, so every stage computes them identically.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "optim/host_buffer.hpp"
#include "optim/kernels/kernels.hpp"
#include "optim/kernels/thread_pool.hpp"
#include "optim/layout.hpp"
#include "optim/loss_scaler.hpp"
#include "runtime/context.hpp"
#include "zerort/engine.h"

namespace zrt {

struct EngineSettings {
  int stage = 2;
  zrt_dtype_t dtype = ZRT_DTYPE_FP32;
  zrt_optimizer_t optimizer = ZRT_OPTIMIZER_ADAMW;
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0, momentum = 0;
  bool nesterov = false;
  size_t reduce_bucket_bytes = 25 << 20;
  size_t allgather_bucket_bytes = 25 << 20;
  bool overlap = true;
  bool offload_optimizer = false;
  double gradient_clipping = 0;
  int accumulation_steps = 1;
  bool deterministic = false;
  size_t max_live_elements = 1000000000;  // stage 3: gathered elements kept resident
  LossScaler::Settings scaler;

  // Defaults < configuration file < params struct < environment (see config_keys.cpp).
  static EngineSettings resolve(const Context &context, const zrt_engine_params_t *params);
};

// A request the engine owns: freeing it tells the communicator (which counts live requests).
struct RequestRelease {
  Communicator *comm = nullptr;
  void operator()(Request *r) const {
    delete r;
    if (comm != nullptr) comm->request_freed();
  }
};
using RequestPtr = std::unique_ptr<Request, RequestRelease>;

class Engine {
 public:
  Engine(Context &context, const EngineSettings &settings);  // collective
  ~Engine();
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  const EngineSettings &settings() const { return settings_; }
  Context &context() const { return context_; }
  bool committed() const { return committed_; }
  int param_count() const { return static_cast<int>(params_info_.size()); }
  const ParamInfo &param(int index) const;

  int register_param(const char *name, zrt_dtype_t dtype, int ndim, const int64_t *shape);
  void commit();  // collective
  void set_param(int index, const void *values, zrt_dtype_t dtype);
  void get_param(int index, void *values, zrt_dtype_t dtype);  // collective
  void *param_data(int index);
  void *grad_data(int index);
  void grad_ready(int index);
  zrt_step_report_t step();  // collective
  void gather(int index);    // collective (stage 3)
  void release(int index);
  void set_lr(double lr);
  // Overrides the engine's weight decay for one parameter (biases, norms: often 0).
  void set_weight_decay(int index, double weight_decay);
  double loss_scale() const { return scaler_.scale(); }
  zrt_memory_report_t memory() const;

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
  };
  std::vector<StatePiece> state_pieces() const;
  MPI_Comm control_comm() const { return control_; }
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  int64_t step_count() const { return step_; }
  double lr() const { return lr_; }
  bool has_m() const { return !m_.empty(); }
  bool has_v() const { return !v_.empty(); }
  const LossScaler &scaler() const { return scaler_; }
  // Throws Error(ZRT_ERR_INVALID_STATE) unless the engine is committed and between steps.
  void require_between_steps(const char *what) const;
  // After the master weights and moments were overwritten: refresh the compute copies
  // (gathering them at stages 1 and 2), clear gradients, and take the saved step and scale.
  void finish_load(int64_t step, const LossScaler::State &scaler);  // collective

 private:
  struct OwnedRange {
    int bucket;
    int owner;     // whose slice
    size_t flat;   // first element, flat coordinates
    size_t state;  // first element in master_/m_/v_
    size_t count;
  };
  struct Pending {
    int bucket;
    RequestPtr request;
    int scratch = -1;  // slice buffer the result lands in, or -1
  };

  size_t esize() const;
  void require_committed(const char *what) const;
  void require_index(int index) const;
  bool mixed() const { return settings_.dtype != ZRT_DTYPE_FP32; }
  bool last_micro_step() const { return micro_ + 1 >= settings_.accumulation_steps; }

  RequestPtr post(CollArgs args);
  int acquire_scratch();

  // Gradient buckets.
  // Stages 2-3: acquire (and zero) the buffer of the bucket's group (layout.hpp) and return
  // its start.
  char *group_buffer(int bucket);
  void try_post();
  void post_bucket(int bucket);
  void complete_oldest();
  void drain();

  // The step.
  void validate_ready();
  bool overflow();
  double grad_norm_squared();
  // A parameter's part of an owned range.
  struct Piece {
    int param, owner;
    size_t param_offset;  // where the piece starts inside the parameter
    OptimRange range;
  };
  OptimRange sub_range(const OptimRange &r, size_t begin, size_t count) const;
  std::vector<Piece> param_pieces() const;
  double weight_decay_of(int param) const;
  // Runs kernel(param, range) over everything this rank updates, on the threads; param is
  // -1 when every parameter has the engine's weight decay.
  void for_each_range(const std::function<void(int, const OptimRange &)> &kernel);
  void run_optimizer(float grad_scale);
  void run_lamb(const AdamStep &base);
  void gather_updated_params();
  void reset_micro_step();
  OptimRange optim_range(const OwnedRange &r) const;
  std::vector<double> gather_partials(const std::vector<double> &mine, size_t per_rank);

  // Stage 3.
  void fetch(int group, bool wait_now);
  void finish_prefetch();
  void drop_gathered();
  void free_gathered(int group);
  void evict_gathered();

  Context &context_;
  EngineSettings settings_;
  std::unique_ptr<Communicator> comm_;
  MPI_Comm control_ = MPI_COMM_NULL;  // the engine's own agreements, never mixed with data
  int rank_ = 0, nranks_ = 1;
  const KernelTable *kernels_ = nullptr;
  ThreadPool *threads_ = nullptr;  // the context's (EnginePart)
  Pool *host_ = nullptr;           // the context's host pool (MemoryPart), taken at commit
  LossScaler scaler_;

  std::vector<ParamInfo> params_info_;  // registration, then the layout's copy
  std::map<std::string, int> names_;
  bool committed_ = false;
  bool custom_decay_ = false;  // some parameter has its own weight decay
  Layout layout_;
  std::vector<OwnedRange> owned_;

  HostBuffer params_, master_, m_, v_, grads_;
  std::vector<HostBuffer> bucket_buffers_;
  std::vector<int> free_buffers_;
  std::vector<int> bucket_buffer_of_;  // group -> buffer index, -1 if none
  std::vector<HostBuffer> scratch_;    // slice-sized landing buffers
  std::vector<int> free_scratch_;

  std::vector<char> ready_;        // per parameter, this micro-step
  std::vector<int> bucket_ready_;  // ready parameters per bucket
  int next_post_ = 0;              // the next bucket to reduce, in bucket order
  std::deque<Pending> in_flight_;
  int micro_ = 0;
  int64_t step_ = 0;
  double lr_ = 0;

  // Stage 3: gathered buckets. A released bucket stays resident (DeepSpeed's "live
  // parameters") until the resident elements exceed max_live_elements; then the least
  // recently used released buckets go. The sequence of gathers and releases is the same on
  // every rank, so every rank evicts, and later re-gathers, the same buckets.
  std::vector<HostBuffer> gathered_;     // per group (at its first bucket), empty when not resident
  std::vector<int> gathered_refs_;       // gathered parameters per bucket
  std::vector<uint64_t> gathered_used_;  // last use, for LRU eviction
  uint64_t use_clock_ = 0;
  size_t resident_elements_ = 0;
  std::vector<HostBuffer> spare_gather_;  // freed buffers kept for reuse
  std::vector<char> param_gathered_;
  std::vector<RequestPtr> prefetch_;  // all-gathers in flight (one group's buckets)
  int prefetch_bucket_ = -1;
  int last_gathered_bucket_ = -1;
};

}  // namespace zrt
