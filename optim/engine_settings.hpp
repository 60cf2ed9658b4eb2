// What an engine is configured to do: zrt_engine_params_t, the configuration file and the
// environment resolved into one value (defaults < file < params struct < environment, see
// runtime/config_keys.cpp), checked once before any buffer exists.
#pragma once

#include <cstddef>
#include <vector>

#include "optim/loss_scaler.hpp"
#include "optim/lr_scheduler.hpp"
#include "runtime/runtime_context.hpp"
#include "runtime/settings_agreement.hpp"
#include "zerort/engine.h"

namespace zrt {

enum class EngineMemorySpace { Host, Device, Auto };

struct EngineSettings {
  int stage = 2;
  EngineMemorySpace memory_space = EngineMemorySpace::Host;
  void *stream = nullptr;  // the program's (a cudaStream_t), with a device engine
  zrt_dtype_t dtype = ZRT_DTYPE_FP32;
  zrt_optimizer_t optimizer = ZRT_OPTIMIZER_ADAMW;
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0, momentum = 0;
  bool nesterov = false;
  size_t reduce_bucket_bytes = 25 << 20;
  size_t allgather_bucket_bytes = 25 << 20;
  bool overlap = true;
  bool offload_optimizer = false;
  bool offload_param = false;  // stage 3: the parameter shard in pinned host memory
  // The share of the optimizer state offloaded (partial offload below 1; model_state.hpp).
  double offload_ratio = 1;
  // ZeRO-Offload's CPU step during backward (engine.offload_step during_backward).
  bool offload_during_backward = true;
  double gradient_clipping = 0;
  int accumulation_steps = 1;
  bool deterministic = false;
  bool check_grad_overflow = true;  // skip a step whose global gradient norm is not finite
  bool shared_buffers = true;       // engine.shared_buffers = auto: node-shared collective buffers
  size_t max_live_elements = 1000000000;  // stage 3: gathered elements kept resident
  LossScaler::Settings scaler;
  LrSchedulerSettings scheduler;  // type None: the program sets the rate (zrt_engine_set_lr)
  // DeepSpeed's batch sizes (optim/batch_size.hpp); 0 where none was given.
  int64_t train_batch_size = 0, micro_batch_size = 0;
  int64_t steps_per_print = 0;  // 0: no progress line
  // What every rank must resolve alike (runtime/settings_agreement.hpp): every key of the
  // engine's configuration that is not per-rank, and the bucket sizes in bytes.
  std::vector<Setting> agreed;

  // Throws Error naming the field or key and the accepted values. Local.
  static EngineSettings resolve(const Context &context, const zrt_engine_params_t *params);
  // The same over a configuration resolved elsewhere (a plan's, engine_plan.hpp), for an
  // engine over `ranks` ranks.
  static EngineSettings resolve(const Config &config, const zrt_engine_params_t *params, int ranks);

  bool mixed() const { return dtype != ZRT_DTYPE_FP32; }
  bool two_moments() const { return optimizer != ZRT_OPTIMIZER_SGD; }
  bool has_momentum() const { return two_moments() || momentum > 0; }
};

const char *optimizer_name(zrt_optimizer_t optimizer);  // "adamw"; throws for bad values

}  // namespace zrt
