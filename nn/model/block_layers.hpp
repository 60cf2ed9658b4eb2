// The layers made of layers, and those that mix the positions of a sequence:
//   Sequence     layers one after the other (the model itself, a residual block's body);
//                keeps each layer's output for backward
//   residual     out = in + body(in), the body a sequence whose output has in's shape
//   attention    multi-head self-attention over (T, 3C) rows [q | k | v] -> (T, C), causal
//                (position t attends to 0..t) or over every position
//   transformer  GPT-2's pre-LN block on (T, C):
//                  x += proj(attention(qkv(ln(x))));  x += proj(gelu_tanh(fc(ln(x))))
//                its tensors named attn.ln, attn.qkv, attn.proj, mlp.ln, mlp.fc, mlp.proj
//   embedding    token ids (T) -> (T, C): wte (vocab, C)[id] + wpe (positions, C)[t]
#pragma once

#include <utility>

#include <zerort/nn/attention.hpp>

#include "layer.hpp"

namespace zrt::nn::model {

class Sequence final : public Layer {
 public:
  /// Layers (each named: its parameters are prefix + name + "." + theirs) over @p in.
  Sequence(const Shape &in, std::vector<std::pair<std::string, std::unique_ptr<Layer>>> layers,
           std::string type = "sequence");
  std::string type() const override { return type_; }
  void declare(std::vector<TensorSpec> &layout, const std::string &prefix) override;
  void initialize(std::mt19937_64 &rng, std::vector<std::vector<float>> &values) override;
  void forward(Pass &pass, CMat<float> in, Mat<float> out) override;
  void backward(Pass &pass, CMat<float> in, CMat<float> out, CMat<float> dout,
                Mat<float> din) override;
  bool reads_tokens() const override;
  std::string to_onnx(OnnxWriter &writer, const std::string &input,
                      const std::string &prefix) const override;
  /// One line per layer, indented by @p indent.
  void describe_lines(std::vector<std::string> &lines, const std::string &indent) const;
  size_t size() const { return layers_.size(); }
  const Layer &front() const { return *layers_.front().second; }

 private:
  Mat<float> activation(size_t i, int64_t batch);
  std::string type_;
  std::vector<std::pair<std::string, std::unique_ptr<Layer>>> layers_;
  std::vector<Buffer> outputs_;  // of every layer but the last (which writes out)
  Buffer grads_[2];              // ping-pong: the gradient of a layer's input
};

class Residual final : public Layer {
 public:
  Residual(const Shape &in, std::unique_ptr<Sequence> body, const std::string &type = "residual");
  std::string type() const override { return type_; }
  void declare(std::vector<TensorSpec> &layout, const std::string &prefix) override;
  void initialize(std::mt19937_64 &rng, std::vector<std::vector<float>> &values) override;
  void forward(Pass &pass, CMat<float> in, Mat<float> out) override;
  void backward(Pass &pass, CMat<float> in, CMat<float> out, CMat<float> dout,
                Mat<float> din) override;
  std::string to_onnx(OnnxWriter &writer, const std::string &input,
                      const std::string &prefix) const override;
  const Sequence &body() const { return *body_; }

 private:
  std::unique_ptr<Sequence> body_;
  std::string type_;
  Buffer body_out_;
};

class Attention final : public Layer {
 public:
  Attention(const Shape &in, int heads, bool causal);
  std::string type() const override { return "attention"; }
  void forward(Pass &pass, CMat<float> in, Mat<float> out) override;
  void backward(Pass &pass, CMat<float> in, CMat<float> out, CMat<float> dout,
                Mat<float> din) override;
  std::string to_onnx(OnnxWriter &writer, const std::string &input,
                      const std::string &prefix) const override;
  std::string describe() const override;

 private:
  /// The kernels' shape for @p batch samples (and the all-keys lengths without a mask).
  AttentionShape shape(int64_t batch);
  int heads_;
  bool causal_;
  Buffer qkvp_, att_, yp_, dqkvp_, datt_, doutp_;
  Kokkos::View<int *, MemSpace> lengths_;  // every key, for attention without a mask
};

class Embedding final : public Layer {
 public:
  Embedding(const Shape &in, int64_t vocab, int64_t positions, int64_t features);
  std::string type() const override { return "embedding"; }
  void declare(std::vector<TensorSpec> &layout, const std::string &prefix) override;
  void initialize(std::mt19937_64 &rng, std::vector<std::vector<float>> &values) override;
  void forward(Pass &pass, CMat<float> in, Mat<float> out) override;
  void backward(Pass &pass, CMat<float> in, CMat<float> out, CMat<float> dout,
                Mat<float> din) override;
  bool reads_tokens() const override { return true; }
  std::string to_onnx(OnnxWriter &writer, const std::string &input,
                      const std::string &prefix) const override;
  std::string describe() const override;
  int64_t vocab() const { return vocab_; }

 private:
  int64_t vocab_, positions_, features_;
  int wte_ = -1, wpe_ = -1;
};

/// GPT-2's block over (T, C) as a Sequence of two residual blocks.
std::unique_ptr<Layer> make_transformer(const Shape &in, int heads, bool causal, int64_t mlp_ratio,
                                        double eps);

}  // namespace zrt::nn::model
