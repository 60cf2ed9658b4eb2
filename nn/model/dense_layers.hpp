// The layers with parameters that act on each row alone:
//   linear     out (rows, features) = in (rows, in) . weight (features, in)^T + bias (features)
//              (PyTorch's nn.Linear: its weight layout and initialization)
//   layernorm  out (rows, C) = (in - mean) / sqrt(var + eps) * weight (C) + bias (C)
#pragma once

#include "layer.hpp"

namespace zrt::nn::model {

class Linear final : public Layer {
 public:
  Linear(const Shape &in, int64_t features, bool bias);
  std::string type() const override { return "linear"; }
  void declare(std::vector<TensorSpec> &layout, const std::string &prefix) override;
  void initialize(std::mt19937_64 &rng, std::vector<std::vector<float>> &values) override;
  void forward(Pass &pass, CMat<float> in, Mat<float> out) override;
  void backward(Pass &pass, CMat<float> in, CMat<float> out, CMat<float> dout,
                Mat<float> din) override;
  std::string to_onnx(OnnxWriter &writer, const std::string &input,
                      const std::string &prefix) const override;
  std::string describe() const override;

 private:
  int64_t features_;
  bool bias_;
  int weight_ = -1, bias_id_ = -1;
};

class LayerNorm final : public Layer {
 public:
  LayerNorm(const Shape &in, double eps);
  std::string type() const override { return "layernorm"; }
  void declare(std::vector<TensorSpec> &layout, const std::string &prefix) override;
  void initialize(std::mt19937_64 &rng, std::vector<std::vector<float>> &values) override;
  void forward(Pass &pass, CMat<float> in, Mat<float> out) override;
  void backward(Pass &pass, CMat<float> in, CMat<float> out, CMat<float> dout,
                Mat<float> din) override;
  std::string to_onnx(OnnxWriter &writer, const std::string &input,
                      const std::string &prefix) const override;
  std::string describe() const override;

 private:
  double eps_;
  int weight_ = -1, bias_ = -1;
  Buffer mean_, rstd_, scratch_;
};

}  // namespace zrt::nn::model
