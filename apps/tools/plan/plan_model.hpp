// The models zrt-plan plans: the apps' own (zrt-gpt2's and zrt-bert's presets and JSON
// configurations, Hugging Face's config.json), as the very tensors those programs register
// and the activations they allocate, or a generic transformer given by its size.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <zerort/nn/tensor_spec.hpp>

namespace plan {

enum class ActivationMode { keep, recompute, offload };
ActivationMode activation_mode(const std::string &name);  // throws naming the accepted ones
const char *activation_mode_name(ActivationMode mode);

// What one rank's model keeps for a micro-batch, in bytes.
struct ActivationBytes {
  int64_t resident = 0;   // allocated where the model computes
  int64_t offloaded = 0;  // held in pinned host memory at the most (offload)
};

struct PlanModel {
  std::string name;
  std::string family;                        // "gpt2", "bert" or "generic"
  std::vector<zrt::nn::TensorSpec> tensors;  // in registration order
  int64_t parameters = 0;                    // sum of the tensors' elements
  int max_seq = 0;                           // positions the model embeds
  int layers = 0, hidden = 0;                // blocks and width, for attention's FLOPs

  // Forward and backward FLOPs per token at sequence length seq: 6 per parameter for the
  // matrix products, 12 x layers x width x seq for attention (llm.c's and PaLM's count).
  double flops_per_token(int seq) const {
    return 6.0 * static_cast<double>(parameters) +
           12.0 * layers * static_cast<double>(hidden) * seq;
  }
  nlohmann::json config;  // the model's shape, as its program prints it

  // The activations the model's program allocates for micro-batches of `batch` sequences
  // of `seq` tokens (the apps' own carving; a generic model is carved as GPT-2); BERT's
  // masked positions: max_predictions a sequence (< 0: zrt-bert's default, round(0.15 x
  // seq)). Throws std::invalid_argument when the model's program has no such mode.
  ActivationBytes activations(int batch, int seq, ActivationMode mode,
                              int max_predictions = -1) const;

  // The program's own carving, for checked arguments.
  std::function<ActivationBytes(int batch, int seq, ActivationMode mode, int max_predictions)>
      carve;
};

// A preset of zrt-gpt2 (gpt2, gpt2-medium, gpt2-large, gpt2-xl, dN) or zrt-bert (bert-tiny
// ... bert-large), or a JSON file: zrt-gpt2's or zrt-bert's, or Hugging Face's config.json
// (model_type "gpt2" or "bert"; without it, BERT's keys or GPT-2's decide). Throws
// std::invalid_argument naming the field or the names known.
PlanModel model_from_spec(const std::string &spec);

// A GPT-2-shaped transformer of `layers` blocks of width `hidden`, whose token embedding
// holds what `params` leaves after the blocks, the position embedding (1024 rows) and the
// final LayerNorm. Throws std::invalid_argument naming the field when the sizes cannot be
// one (heads not dividing the width, params smaller than the blocks, a size below 1).
PlanModel generic_model(int64_t params, int layers, int hidden, int heads);

}  // namespace plan
