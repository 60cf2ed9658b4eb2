// A model from a configuration file (zrt_model_create): its layers as one Sequence, its
// parameters in zerort's engine (any stage) through the EngineModelState the trainers use,
// its loss, and the steps of training and inference.
//
// Every call is split in two: prepare_*() checks the arguments and copies the inputs in
// (local: what fails there fails before any collective, so the C API agrees on it across
// the ranks first), then run_*() does the collective work. Not thread-safe.
#pragma once

#include <zerort/model.h>
#include <zerort/nn/model_state.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "block_layers.hpp"
#include "model_config.hpp"

namespace zrt::nn::model {

class Model {
 public:
  /// Collective: creates the engine, registers and initializes the parameters.
  Model(zrt_context_h context, ModelConfig config);
  ~Model();

  // Local checks and copies.
  void prepare_train(const zrt_tensor_t *input, const zrt_tensor_t *target);
  void prepare_forward(const zrt_tensor_t *input, const zrt_tensor_t *output, bool train);
  void prepare_backward(const zrt_tensor_t *output_grad);
  // Collective work.
  double run_train();
  void run_forward(zrt_tensor_t *output, bool train);
  void run_backward();

  void save(const std::string &path);
  void load(const std::string &path);
  void export_safetensors(const std::string &path);
  void export_onnx(const std::string &path);
  zrt_model_info_t info() const;
  std::string describe() const;
  const ModelConfig &config() const { return config_; }
  zrt_comm_h comm() const { return comm_; }
  int rank() const { return rank_; }

 private:
  void check_input(const zrt_tensor_t *t, const char *what);
  void check_shape(const zrt_tensor_t *t, const Shape &per_sample, int64_t batch,
                   const char *what) const;
  void load_tokens(const float *host_ids, int64_t n, int64_t vocab, const char *what,
                   Kokkos::View<int *, MemSpace> &dst);
  void forward_pass(bool train);
  /// Backward, then the engine's step; whether the update was applied.
  bool step_after_backward();
  std::string checkpoint_metadata() const;
  /// Every tensor's full value on the host, in layout order (collective at stages 1-3).
  std::vector<std::vector<float>> gather_all();

  ModelConfig config_;
  zrt_context_h context_;
  zrt_comm_h comm_ = nullptr;
  int rank_ = 0, ranks_ = 1;
  std::unique_ptr<Sequence> net_;
  std::vector<TensorSpec> layout_;
  std::unique_ptr<ModelState> state_;
  int64_t parameters_ = 0;
  double base_lr_ = 0;
  int stage_ = -1;

  // The current call's batch.
  int64_t batch_ = 0;
  Buffer input_, output_, dout_, target_;
  Kokkos::View<int *, MemSpace> tokens_, classes_;
  bool forwarded_ = false;  // forward_train ran and backward_step has not

  uint64_t micro_steps_ = 0;
  int64_t optimizer_steps_ = 0;
  double last_loss_;
  double last_lr_ = 0;
};

/// Starts Kokkos when the program has not (on the context's GPU in a CUDA build) and ends it
/// at exit. Local.
void ensure_kokkos(zrt_context_h context);

}  // namespace zrt::nn::model
