#include "block_layers.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include <zerort/nn/attention.hpp>
#include <zerort/nn/encoder.hpp>
#include <zerort/nn/residual.hpp>

#include "dense_layers.hpp"
#include "initialization.hpp"
#include "onnx_writer.hpp"
#include "pointwise_layers.hpp"

namespace zrt::nn::model {

namespace {
CVec<float> flat(CMat<float> m) {
  return CVec<float>(m.data(), m.extent(0) * m.extent(1));
}
Vec<float> flat(Mat<float> m) {
  return Vec<float>(m.data(), m.extent(0) * m.extent(1));
}
}  // namespace

namespace block_kernels {
// dst += src, elementwise.
void add_into(Vec<float> dst, CVec<float> src) {
  Kokkos::parallel_for(
      "residual_add", RangePolicy(0, static_cast<int64_t>(dst.extent(0))),
      KOKKOS_LAMBDA(int64_t i) { dst(i) += src(i); });
}
}  // namespace block_kernels

// ---- Sequence -----------------------------------------------------------------------------

Sequence::Sequence(const Shape &in,
                   std::vector<std::pair<std::string, std::unique_ptr<Layer>>> layers,
                   std::string type)
    : type_(std::move(type)), layers_(std::move(layers)) {
  if (layers_.empty()) throw std::invalid_argument("a sequence needs at least one layer");
  in_ = in;
  out_ = layers_.back().second->out_shape();
  outputs_.resize(layers_.size());
}

void Sequence::declare(std::vector<TensorSpec> &layout, const std::string &prefix) {
  for (auto &[name, layer] : layers_)
    layer->declare(layout, prefix + name + ".");
}

void Sequence::initialize(std::mt19937_64 &rng, std::vector<std::vector<float>> &values) {
  for (auto &entry : layers_)
    entry.second->initialize(rng, values);
}

Mat<float> Sequence::activation(size_t i, int64_t batch) {
  const Shape &s = layers_[i].second->out_shape();
  const int64_t rows = rows_of(s, batch);
  return Mat<float>(outputs_[i].get(rows * s.back()), rows, s.back());
}

bool Sequence::reads_tokens() const {
  return layers_.front().second->reads_tokens();
}

void Sequence::forward(Pass &pass, CMat<float> in, Mat<float> out) {
  CMat<float> x = in;
  for (size_t i = 0; i < layers_.size(); ++i) {
    Mat<float> y = i + 1 == layers_.size() ? out : activation(i, pass.batch);
    layers_[i].second->forward(pass, x, y);
    x = y;
  }
}

void Sequence::backward(Pass &pass, CMat<float> in, CMat<float> out, CMat<float> dout,
                        Mat<float> din) {
  CMat<float> g = dout;
  for (size_t i = layers_.size(); i-- > 0;) {
    Layer &layer = *layers_[i].second;
    CMat<float> x = i == 0 ? in : CMat<float>(activation(i - 1, pass.batch));
    CMat<float> y = i + 1 == layers_.size() ? out : CMat<float>(activation(i, pass.batch));
    Mat<float> dx = din;
    if (i > 0) {
      const Shape &s = layer.in_shape();
      const int64_t rows = rows_of(s, pass.batch);
      dx = Mat<float>(grads_[i % 2].get(rows * s.back()), rows, s.back());
    }
    layer.backward(pass, x, y, g, dx);
    g = dx;
  }
}

std::string Sequence::to_onnx(OnnxWriter &w, const std::string &input,
                              const std::string &prefix) const {
  std::string x = input;
  for (const auto &[name, layer] : layers_)
    x = layer->to_onnx(w, x, prefix + name + ".");
  return x;
}

void Sequence::describe_lines(std::vector<std::string> &lines, const std::string &indent) const {
  for (const auto &[name, layer] : layers_) {
    lines.push_back(fmt::format("{}{:<10} {:<40} -> {}", indent, name, layer->describe(),
                                shape_text(layer->out_shape())));
    if (auto *seq = dynamic_cast<const Sequence *>(layer.get()))
      seq->describe_lines(lines, indent + "  ");
    else if (auto *res = dynamic_cast<const Residual *>(layer.get()))
      res->body().describe_lines(lines, indent + "  ");
  }
}

// ---- residual -----------------------------------------------------------------------------

Residual::Residual(const Shape &in, std::unique_ptr<Sequence> body, const std::string &type)
    : body_(std::move(body)), type_(type) {
  in_ = in;
  out_ = in;
}

void Residual::declare(std::vector<TensorSpec> &layout, const std::string &prefix) {
  body_->declare(layout, prefix);
}

void Residual::initialize(std::mt19937_64 &rng, std::vector<std::vector<float>> &values) {
  body_->initialize(rng, values);
}

void Residual::forward(Pass &pass, CMat<float> in, Mat<float> out) {
  // The body's output is kept apart from the sum: its last layer's backward may read it.
  Mat<float> y(body_out_.get(in.extent(0) * in.extent(1)), in.extent(0), in.extent(1));
  body_->forward(pass, in, y);
  residual_forward<float>(flat(out), flat(in), flat(y));
}

void Residual::backward(Pass &pass, CMat<float> in, CMat<float>, CMat<float> dout, Mat<float> din) {
  CMat<float> y(body_out_.view.data(), in.extent(0), in.extent(1));
  body_->backward(pass, in, y, dout, din);
  // The sum's gradient flows into the input unchanged as well.
  if (din.extent(0) > 0) block_kernels::add_into(flat(din), flat(dout));
}

std::string Residual::to_onnx(OnnxWriter &w, const std::string &input,
                              const std::string &prefix) const {
  return w.node("Add", {input, body_->to_onnx(w, input, prefix)}, prefix + "residual");
}

// ---- attention ----------------------------------------------------------------------------

Attention::Attention(const Shape &in, int heads, bool causal) : heads_(heads), causal_(causal) {
  in_ = in;
  out_ = in;
  out_.back() = in.back() / 3;
}

AttentionShape Attention::shape(int64_t batch) {
  const int B = static_cast<int>(batch), T = static_cast<int>(in_[0]);
  AttentionShape s{B, T, heads_, static_cast<int>(out_.back()) / heads_};
  if (!causal_) {
    // Every key of every sequence: the padding mask with all T positions real.
    s.mask = AttentionMask::padding;
    if (lengths_.extent(0) != static_cast<size_t>(B)) {
      lengths_ = Kokkos::View<int *, MemSpace>("attention_lengths", B);
      Kokkos::deep_copy(lengths_, T);
    }
    s.lengths = lengths_;
  }
  return s;
}

void Attention::forward(Pass &pass, CMat<float> in, Mat<float> out) {
  const AttentionShape s = shape(pass.batch);
  const int64_t btc = int64_t{s.B} * s.T * s.NH * s.hs, att = int64_t{s.B} * s.NH * s.T * s.T;
  attention_forward<float>(out, Vec<float>(qkvp_.get(3 * btc), 3 * btc),
                           Vec<float>(att_.get(att), att), Vec<float>(yp_.get(btc), btc), in, s);
}

void Attention::backward(Pass &pass, CMat<float>, CMat<float>, CMat<float> dout, Mat<float> din) {
  if (din.extent(0) == 0) return;  // nothing upstream has parameters or needs a gradient
  const AttentionShape s = shape(pass.batch);
  const int64_t btc = int64_t{s.B} * s.T * s.NH * s.hs, att = int64_t{s.B} * s.NH * s.T * s.T;
  attention_backward<float>(din, Vec<float>(dqkvp_.get(3 * btc), 3 * btc),
                            Vec<float>(datt_.get(att), att), Vec<float>(doutp_.get(btc), btc), dout,
                            CVec<float>(qkvp_.view.data(), 3 * btc),
                            CVec<float>(att_.view.data(), att), s);
}

std::string Attention::to_onnx(OnnxWriter &w, const std::string &x, const std::string &p) const {
  const int64_t T = in_[0], C = out_.back(), hs = C / heads_;
  // (B, T, 3C) -> q, k, v (B, H, T, hs)
  const std::string split = w.ints(p + "split", {C, C, C});
  const std::string q0 = w.node("Split", {x, split}, p + "split", {{"axis", int64_t{-1}}}, 3);
  // Split's three outputs are q0 and its siblings "q0:1", "q0:2" (OnnxWriter's convention).
  const std::string shape4 = w.ints(p + "shape4", {0, 0, heads_, hs});
  auto heads = [&](const std::string &v, const std::string &name, std::vector<int64_t> perm) {
    return w.node("Transpose", {w.node("Reshape", {v, shape4}, p + name + "_4d")}, p + name,
                  {{"perm", std::move(perm)}});
  };
  const std::string q = heads(q0, "q", {0, 2, 1, 3});
  const std::string k = heads(q0 + ":1", "kt", {0, 2, 3, 1});
  const std::string v = heads(q0 + ":2", "v", {0, 2, 1, 3});
  std::string scores = w.node(
      "Mul",
      {w.node("MatMul", {q, k}, p + "qk"), w.scalar(p + "scale", 1.0f / std::sqrt(float(hs)))},
      p + "scores");
  if (causal_) {
    // -inf above the diagonal: those keys get probability exactly 0, as in training.
    std::vector<float> mask(static_cast<size_t>(T * T), 0.0f);
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = i + 1; j < T; ++j)
        mask[static_cast<size_t>(i * T + j)] = -std::numeric_limits<float>::infinity();
    scores = w.node("Add", {scores, w.floats(p + "mask", {T, T}, mask)}, p + "masked");
  }
  const std::string probs = w.node("Softmax", {scores}, p + "softmax", {{"axis", int64_t{-1}}});
  const std::string y = w.node("MatMul", {probs, v}, p + "y");
  const std::string yt =
      w.node("Transpose", {y}, p + "y_t", {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  return w.node("Reshape", {yt, w.ints(p + "shape3", {0, 0, C})}, p + "out");
}

std::string Attention::describe() const {
  return fmt::format("attention {} heads{}", heads_, causal_ ? ", causal" : "");
}

// ---- embedding ----------------------------------------------------------------------------

Embedding::Embedding(const Shape &in, int64_t vocab, int64_t positions, int64_t features)
    : vocab_(vocab), positions_(positions), features_(features) {
  in_ = in;
  out_ = {in[0], features};
}

void Embedding::declare(std::vector<TensorSpec> &layout, const std::string &prefix) {
  wte_ = static_cast<int>(layout.size());
  layout.push_back({prefix + "wte", {vocab_, features_}, true});
  wpe_ = static_cast<int>(layout.size());
  layout.push_back({prefix + "wpe", {positions_, features_}, true});
}

// GPT-2's: normal with deviation 0.02.
void Embedding::initialize(std::mt19937_64 &rng, std::vector<std::vector<float>> &values) {
  values.push_back(normal_values(rng, vocab_ * features_, 0.02));
  values.push_back(normal_values(rng, positions_ * features_, 0.02));
}

void Embedding::forward(Pass &pass, CMat<float>, Mat<float> out) {
  ParameterStore<float> &s = pass.store;
  s.gather(wte_);
  s.gather(wpe_);
  encoder_forward<float>(out, pass.tokens, CMat<float>(s.values(wte_), vocab_, features_),
                         CMat<float>(s.values(wpe_), positions_, features_),
                         static_cast<int>(pass.batch), static_cast<int>(in_[0]));
  s.release(wpe_);
  s.release(wte_);
}

void Embedding::backward(Pass &pass, CMat<float>, CMat<float>, CMat<float> dout, Mat<float>) {
  ParameterStore<float> &s = pass.store;
  GradBuffer<float> gte = s.grad(wte_), gpe = s.grad(wpe_);
  Mat<float> dwte(gte.data, vocab_, features_);
  // encoder_backward adds into dwte (GPT-2's LM head writes it first): start from zero.
  if (!gte.accumulate) Kokkos::deep_copy(dwte, 0.0f);
  encoder_backward<float>(dwte, Mat<float>(gpe.data, positions_, features_), dout, pass.tokens,
                          static_cast<int>(pass.batch), static_cast<int>(in_[0]), beta_of(gpe));
  s.grad_ready(wte_);
  s.grad_ready(wpe_);
}

std::string Embedding::to_onnx(OnnxWriter &w, const std::string &x, const std::string &p) const {
  const std::string ids = w.node("Cast", {x}, p + "ids", {{"to", int64_t{7}}});  // INT64
  const std::string tok = w.node("Gather", {w.parameter(wte_), ids}, p + "tokens");
  const std::string pos = w.node("Slice",
                                 {w.parameter(wpe_), w.ints(p + "starts", {0}),
                                  w.ints(p + "ends", {in_[0]}), w.ints(p + "axes", {0})},
                                 p + "positions");
  return w.node("Add", {tok, pos}, p + "embedding");
}

std::string Embedding::describe() const {
  return fmt::format("embedding vocab {}, {} positions, {} features", vocab_, positions_,
                     features_);
}

// ---- transformer --------------------------------------------------------------------------

std::unique_ptr<Layer> make_transformer(const Shape &in, int heads, bool causal, int64_t mlp_ratio,
                                        double eps) {
  const int64_t C = in.back();
  using Named = std::vector<std::pair<std::string, std::unique_ptr<Layer>>>;
  Named attn;
  attn.emplace_back("ln", std::make_unique<LayerNorm>(in, eps));
  attn.emplace_back("qkv", std::make_unique<Linear>(in, 3 * C, true));
  attn.emplace_back("attention",
                    std::make_unique<Attention>(attn.back().second->out_shape(), heads, causal));
  attn.emplace_back("proj", std::make_unique<Linear>(attn.back().second->out_shape(), C, true));
  Named mlp;
  mlp.emplace_back("ln", std::make_unique<LayerNorm>(in, eps));
  mlp.emplace_back("fc", std::make_unique<Linear>(in, mlp_ratio * C, true));
  mlp.emplace_back("gelu", std::make_unique<ActivationLayer>(mlp.back().second->out_shape(),
                                                             Activation::gelu_tanh));
  mlp.emplace_back("proj", std::make_unique<Linear>(mlp.back().second->out_shape(), C, true));
  Named block;
  block.emplace_back(
      "attn", std::make_unique<Residual>(in, std::make_unique<Sequence>(in, std::move(attn))));
  block.emplace_back(
      "mlp", std::make_unique<Residual>(in, std::make_unique<Sequence>(in, std::move(mlp))));
  return std::make_unique<Sequence>(in, std::move(block), "transformer");
}

}  // namespace zrt::nn::model
