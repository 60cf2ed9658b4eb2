// The layers with parameters that act on each row alone: linear and LayerNorm.
#include "dense_layers.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include <zerort/nn/layernorm.hpp>
#include <zerort/nn/matmul.hpp>

#include "initialization.hpp"
#include "onnx_writer.hpp"

namespace zrt::nn::model {

// ---- linear -------------------------------------------------------------------------------

Linear::Linear(const Shape &in, int64_t features, bool bias) : features_(features), bias_(bias) {
  in_ = in;
  out_ = in;
  out_.back() = features;
}

void Linear::declare(std::vector<TensorSpec> &layout, const std::string &prefix) {
  const int64_t in_features = in_.back();
  weight_ = static_cast<int>(layout.size());
  layout.push_back({prefix + "weight", {features_, in_features}, true});
  if (bias_) {
    bias_id_ = static_cast<int>(layout.size());
    layout.push_back({prefix + "bias", {features_}, false});
  }
}

// PyTorch's nn.Linear: weight and bias uniform in +-1/sqrt(in features).
void Linear::initialize(std::mt19937_64 &rng, std::vector<std::vector<float>> &values) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_.back()));
  values.push_back(uniform_values(rng, features_ * in_.back(), bound));
  if (bias_) values.push_back(uniform_values(rng, features_, bound));
}

void Linear::forward(Pass &pass, CMat<float> in, Mat<float> out) {
  ParameterStore<float> &s = pass.store;
  s.gather(weight_);
  if (bias_) s.gather(bias_id_);
  CMat<float> w(s.values(weight_), features_, in_.back());
  CVec<float> b = bias_ ? CVec<float>(s.values(bias_id_), features_) : CVec<float>();
  matmul_forward<float>(out, in, w, b);
  if (bias_) s.release(bias_id_);
  s.release(weight_);
}

void Linear::backward(Pass &pass, CMat<float> in, CMat<float> /*out*/, CMat<float> dout,
                      Mat<float> din) {
  ParameterStore<float> &s = pass.store;
  const int64_t in_features = in_.back();
  s.gather(weight_);
  CMat<float> w(s.values(weight_), features_, in_features);
  GradBuffer<float> gw = s.grad(weight_);
  Mat<float> dw(gw.data, features_, in_features);
  GradBuffer<float> gb;
  Vec<float> db;
  if (bias_) {
    gb = s.grad(bias_id_);
    db = Vec<float>(gb.data, features_);
  }
  // An empty din (the model's input) skips the input's gradient.
  matmul_backward<float>(din, dw, db, dout, in, w, 0.0f, beta_of(gw));
  s.grad_ready(weight_);
  if (bias_) s.grad_ready(bias_id_);
  s.release(weight_);
}

std::string Linear::to_onnx(OnnxWriter &w, const std::string &input,
                            const std::string &prefix) const {
  // Gemm takes 2-D inputs only; MatMul broadcasts over leading dimensions.
  std::string y = w.node("MatMul",
                         {input, w.node("Transpose", {w.parameter(weight_)}, prefix + "weight_t",
                                        {{"perm", std::vector<int64_t>{1, 0}}})},
                         prefix + "matmul");
  if (bias_) y = w.node("Add", {y, w.parameter(bias_id_)}, prefix + "add");
  return y;
}

std::string Linear::describe() const {
  return fmt::format("linear {} -> {}{}", in_.back(), features_, bias_ ? "" : " (no bias)");
}

// ---- LayerNorm ----------------------------------------------------------------------------

LayerNorm::LayerNorm(const Shape &in, double eps) : eps_(eps) {
  in_ = in;
  out_ = in;
}

void LayerNorm::declare(std::vector<TensorSpec> &layout, const std::string &prefix) {
  weight_ = static_cast<int>(layout.size());
  layout.push_back({prefix + "weight", {in_.back()}, false});
  bias_ = static_cast<int>(layout.size());
  layout.push_back({prefix + "bias", {in_.back()}, false});
}

void LayerNorm::initialize(std::mt19937_64 &, std::vector<std::vector<float>> &values) {
  values.emplace_back(static_cast<size_t>(in_.back()), 1.0f);
  values.emplace_back(static_cast<size_t>(in_.back()), 0.0f);
}

void LayerNorm::forward(Pass &pass, CMat<float> in, Mat<float> out) {
  ParameterStore<float> &s = pass.store;
  const int64_t rows = in.extent(0), C = in_.back();
  s.gather(weight_);
  s.gather(bias_);
  layernorm_forward<float>(out, Vec<float>(mean_.get(rows), rows),
                           Vec<float>(rstd_.get(rows), rows), in, CVec<float>(s.values(weight_), C),
                           CVec<float>(s.values(bias_), C), static_cast<float>(eps_));
  s.release(bias_);
  s.release(weight_);
}

void LayerNorm::backward(Pass &pass, CMat<float> in, CMat<float>, CMat<float> dout,
                         Mat<float> din) {
  ParameterStore<float> &s = pass.store;
  const int64_t rows = in.extent(0), C = in_.back();
  s.gather(weight_);
  GradBuffer<float> gw = s.grad(weight_), gb = s.grad(bias_);
  // layernorm_backward always writes an input gradient: the model's first layer gets
  // scratch for one it does not need.
  Mat<float> dinp = din.extent(0) > 0 ? din : Mat<float>(scratch_.get(rows * C), rows, C);
  layernorm_backward<float>(dinp, Vec<float>(gw.data, C), Vec<float>(gb.data, C), dout, in,
                            CVec<float>(s.values(weight_), C), CVec<float>(mean_.view.data(), rows),
                            CVec<float>(rstd_.view.data(), rows), 0.0f, beta_of(gw));
  s.grad_ready(weight_);
  s.grad_ready(bias_);
  s.release(weight_);
}

std::string LayerNorm::to_onnx(OnnxWriter &w, const std::string &input,
                               const std::string &prefix) const {
  return w.node("LayerNormalization", {input, w.parameter(weight_), w.parameter(bias_)},
                prefix + "layernorm",
                {{"axis", int64_t{-1}}, {"epsilon", static_cast<float>(eps_)}});
}

std::string LayerNorm::describe() const {
  return fmt::format("layernorm {} (eps {:g})", in_.back(), eps_);
}

}  // namespace zrt::nn::model
