// What the models' ONNX graphs share: weights of zrt's layouts read by name and checked,
// linear layers over [out, in] matrices (stored [in, out] so the graph multiplies by them
// directly), LayerNormalization, multi-head attention under a boolean mask, GELU in both of
// its forms.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "onnx_graph.hpp"

namespace zonnx {

/// A tensor of the model's layout: its shape, and how to read its fp32 values, called once
/// when the model is written (so that one tensor at a time is in memory).
struct StoredWeight {
  std::vector<int64_t> shape;
  std::function<std::vector<float>()> values;
};
/// The tensor named so; throws when the file has none.
using WeightReader = std::function<StoredWeight(const std::string &)>;

class ModelBuilder {
 protected:
  /// @p model says, in errors, which model the weights should fit ("a GPT-2 of 2 layers").
  ModelBuilder(OnnxGraph &g, const WeightReader &read, std::string model)
      : g_(g), read_(read), model_(std::move(model)) {}

  /// Weight @p name, checked against @p want; transposed ([out, in] stored [in, out]) when
  /// @p transpose. Throws std::invalid_argument naming it.
  std::string weight(const std::string &name, const std::vector<int64_t> &want, bool transpose);
  /// x W^T + b over the weights PREFIX.weight [out, in] and PREFIX.bias [out].
  std::string linear(const std::string &prefix, const std::string &x, int64_t out, int64_t in);
  /// LayerNormalization over the last axis with PREFIX.weight and PREFIX.bias [width].
  std::string layernorm(const std::string &prefix, const std::string &x, int64_t width, float eps);
  /// Softmax(q k^T / sqrt(d) where @p mask, else -1e9) v for @p heads heads of [B, T, C]
  /// projections; @p mask broadcasts to [B, heads, T, T]. Returns [B, T, C].
  std::string attention(const std::string &q, const std::string &k, const std::string &v,
                        int64_t heads, int64_t width, const std::string &mask,
                        const std::string &hint);
  /// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): GPT-2's.
  std::string gelu_tanh(const std::string &x, const std::string &hint);
  /// 0.5 x (1 + erf(x / sqrt(2))): BERT's.
  std::string gelu_erf(const std::string &x, const std::string &hint);

  OnnxGraph &g_;
  const WeightReader &read_;
  std::string model_;
};

}  // namespace zonnx
