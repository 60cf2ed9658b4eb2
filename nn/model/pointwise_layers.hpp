// The layers without parameters that act on each element alone:
//   relu, tanh, sigmoid, gelu ("approximate": "tanh", GPT-2's and PyTorch's
//   approximate="tanh", or "none", the exact erf form)
//   dropout: in training, each element kept with probability 1 - p and scaled by 1/(1 - p);
//   the identity in inference. The mask is a hash of (seed, rank, micro-step, element), so
//   backward recomputes it rather than keeping it, and a run repeats bit for bit.
#pragma once

#include "layer.hpp"

namespace zrt::nn::model {

enum class Activation { relu, tanh, sigmoid, gelu_tanh, gelu_erf };

class ActivationLayer final : public Layer {
 public:
  ActivationLayer(const Shape &in, Activation kind);
  std::string type() const override;
  void forward(Pass &pass, CMat<float> in, Mat<float> out) override;
  void backward(Pass &pass, CMat<float> in, CMat<float> out, CMat<float> dout,
                Mat<float> din) override;
  std::string to_onnx(OnnxWriter &writer, const std::string &input,
                      const std::string &prefix) const override;
  std::string describe() const override;

 private:
  Activation kind_;
};

class Dropout final : public Layer {
 public:
  Dropout(const Shape &in, double p, uint64_t salt);
  std::string type() const override { return "dropout"; }
  void forward(Pass &pass, CMat<float> in, Mat<float> out) override;
  void backward(Pass &pass, CMat<float> in, CMat<float> out, CMat<float> dout,
                Mat<float> din) override;
  std::string to_onnx(OnnxWriter &writer, const std::string &input,
                      const std::string &prefix) const override;
  std::string describe() const override;

 private:
  double p_;
  uint64_t salt_;  // the layer's place in the model: two dropouts draw different masks
};

}  // namespace zrt::nn::model
