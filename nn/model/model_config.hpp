// A configured model's file: zerort's own form or TorchFort's, read into one description.
//
// zerort's form is a DeepSpeed configuration (the engine's keys: "optimizer", "scheduler",
// "zero_optimization", "gradient_clipping", "bf16", ...) with three keys of its own:
//   "model":  {"input": [per-sample shape], "layers": [{"type": ..., ...}, ...]}
//   "loss":   {"type": "mse" | "l1" | "cross_entropy" | "external", "reduction": "mean" | "sum"}
//   "seed":   the initial values' seed (default 0)
// and, from TorchFort, "lr_scheduler" (a schedule the model sets each step) and "general".
// TorchFort's form ("model": {"type": "mlp", "parameters": {"layer_sizes": [...], "dropout": p}},
// "optimizer": {"type": "adam", "parameters": {"learning_rate": ...}}, "loss": {"type": "MSE"})
// is translated into the same: its MLP is linear, relu, dropout per hidden layer, then linear.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zrt::nn::model {

enum class LossKind { mse, l1, cross_entropy, external };

/// TorchFort's learning-rate schedules (PyTorch's), computed by the model from its step.
struct LrSchedule {
  std::string type;  // "" (none: the engine's rate or scheduler), "step", "multistep",
                     // "polynomial", "cosine_annealing", "linear"
  double base_lr = 0;
  int64_t step_size = 1, total_iters = 5, t_max = 1;
  std::vector<int64_t> milestones;
  double gamma = 0.1, power = 1, eta_min = 0, start_factor = 1.0 / 3, end_factor = 1;
  /// The rate after @p steps optimizer steps.
  double lr(int64_t steps) const;
};

struct ModelConfig {
  std::vector<int64_t> input;  // per sample
  nlohmann::json layers;       // the layers' objects
  LossKind loss = LossKind::mse;
  bool loss_sum = false;  // reduction "sum" (default "mean")
  uint64_t seed = 0;
  LrSchedule schedule;
  int64_t report_frequency = 0;  // TorchFort's general.report_frequency: 0 = never
  bool verbose = false;          // general.verbose: print the model at create
  /// TorchFort's form: weight decay on every tensor, as its torch.optim optimizers over
  /// model.parameters() apply it (zerort's form: linear weights and embeddings only).
  bool decay_all = false;
  nlohmann::json engine_settings;  // the rest: zrt_engine_params_t's settings
  std::string source;              // "FILE" or "the JSON text", for messages
};

/// Reads @p config: a file (.json, .yaml, .yml) or, when it begins with '{', JSON text.
/// Throws std::invalid_argument naming the file and the key.
ModelConfig read_model_config(const std::string &config);

/// The same from a parsed document (the tests' entry point).
ModelConfig parse_model_config(const nlohmann::json &doc, const std::string &source);

}  // namespace zrt::nn::model
