// One layer of a configured model (zrt_model_create): what it declares to the engine, and
// its forward/backward pair over the model's activations.
//
// Every activation is a row-major matrix (rows, width): the last dimension of the
// per-sample shape is the width, the batch and every other dimension are rows (a (B, T, C)
// sequence is (B*T, C)), as in the layers of <zerort/nn.hpp>. A layer sees its parameters
// only through the ParameterStore, in the order forward and backward use them, which is the
// same on every rank: stage 3 gathers each one inside forward and again inside backward.
#pragma once

#include <zerort/nn/parameter_store.hpp>
#include <zerort/nn/tensor.hpp>
#include <zerort/nn/tensor_spec.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace zrt::nn::model {

/// A per-sample shape (no batch dimension).
using Shape = std::vector<int64_t>;

std::string shape_text(const Shape &shape);

/// Rows of a batch of @p batch samples of @p shape: every dimension but the last.
inline int64_t rows_of(const Shape &shape, int64_t batch) {
  int64_t rows = batch;
  for (size_t i = 0; i + 1 < shape.size(); ++i)
    rows *= shape[i];
  return rows;
}

/// What one call of forward or backward works on.
struct Pass {
  ParameterStore<float> &store;
  int64_t batch = 0;   // samples of this rank's batch
  bool train = false;  // dropout on; keep what backward needs
  uint64_t step = 0;   // micro-steps so far: dropout's masks differ from step to step
  int rank = 0;        // and from rank to rank (each rank's batch is other samples)
  uint64_t seed = 0;
  /// Token ids of the batch (rows), for an embedding layer; converted from the fp32 input.
  Tokens tokens;
};

/// A scratch or activation buffer owned by a layer, grown as batches grow.
struct Buffer {
  Kokkos::View<float *, MemSpace> view;
  float *get(int64_t n);
};

class OnnxWriter;  // onnx_writer.hpp

class Layer {
 public:
  virtual ~Layer() = default;
  /// The configuration's type ("linear", "transformer", ...).
  virtual std::string type() const = 0;
  const Shape &in_shape() const { return in_; }
  const Shape &out_shape() const { return out_; }
  /// Appends this layer's parameter tensors (named @p prefix + their names) to @p layout and
  /// remembers their ids (their positions there).
  virtual void declare(std::vector<TensorSpec> & /*layout*/, const std::string & /*prefix*/) {}
  /// Initial values of this layer's tensors, in declaration order, drawn from @p rng.
  virtual void initialize(std::mt19937_64 & /*rng*/, std::vector<std::vector<float>> & /*values*/) {
  }
  /// out (rows, out width) = layer(in (rows, in width)).
  virtual void forward(Pass &pass, CMat<float> in, Mat<float> out) = 0;
  /// Given dout, the gradient of out: writes din (overwritten; empty when the input needs no
  /// gradient: the model's input), and each parameter's gradient into the store.
  virtual void backward(Pass &pass, CMat<float> in, CMat<float> out, CMat<float> dout,
                        Mat<float> din) = 0;
  /// Whether forward reads the batch's token ids rather than @p in (an embedding).
  virtual bool reads_tokens() const { return false; }
  /// Adds this layer's nodes to an ONNX graph: @p input's value in, returns the output's name.
  virtual std::string to_onnx(OnnxWriter &writer, const std::string &input,
                              const std::string &prefix) const = 0;
  /// One line for zrt_model_describe.
  virtual std::string describe() const;

 protected:
  Shape in_, out_;
};

/// A layer built from its JSON object, over inputs of @p in (per sample). Throws
/// std::invalid_argument naming @p where ("layers[3]") and, for an unknown type or key, the
/// nearest known one; for shapes that do not chain, the dimension.
std::unique_ptr<Layer> make_layer(const nlohmann::json &spec, const Shape &in,
                                  const std::string &where);

/// Throws std::invalid_argument for a key of @p spec not in @p known, naming the nearest.
void check_keys(const nlohmann::json &spec, const std::vector<std::string_view> &known,
                const std::string &where);

}  // namespace zrt::nn::model
