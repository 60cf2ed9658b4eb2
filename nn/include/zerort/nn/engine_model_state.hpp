// The model states in zerort's ZeRO engine (zerort/engine.h), any stage.
//
// Every tensor of the model's layout (GPT-2's, BERT's) is one engine parameter, registered in
// layout order, so the engine's
// buckets (formed from the end) follow backward, which completes gradients in exactly the
// reverse order: each bucket's reduction starts while backward works on earlier layers.
// Biases and LayerNorm gains get weight decay 0 (zrt_param_set_weight_decay).
//
// The model computes in fp32 on Kokkos' default execution space. Where the engine's memory
// is fp32 and that space can read it (a host build with the engine in host memory or on the
// emulated device, whose memory is host memory; a CUDA build with the engine on the GPU),
// the store hands the engine's own buffers to the model: no copies. Otherwise (bf16 compute, or a
// device build) it stages each tensor: gather() converts the engine's values into an fp32 buffer in
// the execution space's memory, backward writes the gradient into another, and grad_ready()
// adds that, converted, into the engine's gradient buffer. Either way the model runs in
// fp32; with bf16 the parameters it reads are the engine's bf16 copies (rounded from the
// fp32 master weights) and its gradients are rounded to bf16 before they are reduced.
#pragma once

#include <zerort/checkpoint.h>
#include <zerort/context.h>
#include <zerort/engine.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <zerort/nn/tensor_spec.hpp>
#include "model_state.hpp"

namespace zrt::nn {

struct EngineOptions {
  int stage = 2;                                        // ZeRO stage, 0-3
  zrt_dtype_t dtype = ZRT_DTYPE_FP32;                   // parameters and gradients: fp32 or bf16
  bool deterministic = false;                           // reductions add in rank order
  OptimizerConfig optimizer;                            // AdamW or LAMB, clipping, accumulation
  double lr = 1e-3;                                     // until the first step sets it
  int64_t reduce_bucket_bytes = 0;                      // 0: the engine's (configuration, 25 MiB)
  int64_t max_live_parameters = -1;                     // stage 3; < 0: the engine's
  zrt_engine_memory_t memory = ZRT_ENGINE_MEMORY_HOST;  // where the engine's buffers live
  bool offload_optimizer = false;  // ZeRO-Offload: optimizer state and step on the host
  int shared_buffers = -1;  // 1: node-shared collective buffers, 0: private; < 0: the engine's
  // ZRT_ENGINE_PARAM_FIELD_* bits of the fields above left unset, so that the configuration
  // (file, environment) decides them (training/job_settings.hpp); 0: every field is set.
  uint64_t from_config = 0;
  std::string settings;  // zrt_engine_params_t's settings (a JSON object); empty: none
};

/// Creates an engine over @p context's ranks, registers the tensors of @p layout (a model's
/// parameter_layout()) in the engine's compute dtype (fp32 or bf16; another is refused) and
/// commits. @p resolved_p, if not null, receives zrt_engine_describe's JSON: what the engine
/// resolved from the options, the configuration file and the environment.
/// Collective; throws std::runtime_error with zerort's message on every rank if any fails.
std::unique_ptr<ModelState> make_engine_model_state(zrt_context_h context,
                                                    const std::vector<zrt::nn::TensorSpec> &layout,
                                                    const EngineOptions &options,
                                                    nlohmann::json *resolved_p = nullptr);

}  // namespace zrt::nn
