#include "pointwise_layers.hpp"

#include <fmt/format.h>

#include <zerort/nn/gelu.hpp>
#include <zerort/nn/tanh.hpp>

#include "onnx_writer.hpp"

namespace zrt::nn::model {

namespace pointwise_kernels {

// Kernels in free functions: CUDA's extended lambdas may not live in private members.
void relu_forward(Vec<float> out, CVec<float> in) {
  Kokkos::parallel_for(
      "relu_forward", RangePolicy(0, static_cast<int64_t>(in.extent(0))),
      // NaN stays NaN, as PyTorch's relu: a poisoned batch reaches the engine's check.
      KOKKOS_LAMBDA(int64_t i) { out(i) = in(i) < 0.0f ? 0.0f : in(i); });
}
void relu_backward(Vec<float> din, CVec<float> in, CVec<float> dout) {
  Kokkos::parallel_for(
      "relu_backward", RangePolicy(0, static_cast<int64_t>(in.extent(0))),
      KOKKOS_LAMBDA(int64_t i) { din(i) = in(i) > 0.0f ? dout(i) : 0.0f; });
}
void sigmoid_forward(Vec<float> out, CVec<float> in) {
  Kokkos::parallel_for(
      "sigmoid_forward", RangePolicy(0, static_cast<int64_t>(in.extent(0))),
      KOKKOS_LAMBDA(int64_t i) { out(i) = 1.0f / (1.0f + kmath::exp(-in(i))); });
}
void sigmoid_backward(Vec<float> din, CVec<float> out, CVec<float> dout) {
  Kokkos::parallel_for(
      "sigmoid_backward", RangePolicy(0, static_cast<int64_t>(out.extent(0))),
      KOKKOS_LAMBDA(int64_t i) { din(i) = dout(i) * out(i) * (1.0f - out(i)); });
}

// splitmix64's finalizer: a counter-based generator, the same on every backend.
KOKKOS_INLINE_FUNCTION uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// out = in * mask / (1 - p), where element i is kept when its hash's top 24 bits, as a
// fraction, are at least p.
void dropout(Vec<float> out, CVec<float> in, uint64_t key, float p) {
  const float scale = 1.0f / (1.0f - p);
  Kokkos::parallel_for(
      "dropout", RangePolicy(0, static_cast<int64_t>(in.extent(0))), KOKKOS_LAMBDA(int64_t i) {
        const float u = static_cast<float>(mix(key + static_cast<uint64_t>(i)) >> 40) * 0x1.0p-24f;
        out(i) = u >= p ? in(i)*scale : 0.0f;
      });
}

}  // namespace pointwise_kernels

namespace {
CVec<float> flat(CMat<float> m) {
  return CVec<float>(m.data(), m.extent(0) * m.extent(1));
}
Vec<float> flat(Mat<float> m) {
  return Vec<float>(m.data(), m.extent(0) * m.extent(1));
}
}  // namespace

ActivationLayer::ActivationLayer(const Shape &in, Activation kind) : kind_(kind) {
  in_ = in;
  out_ = in;
}

std::string ActivationLayer::type() const {
  switch (kind_) {
    case Activation::relu:
      return "relu";
    case Activation::tanh:
      return "tanh";
    case Activation::sigmoid:
      return "sigmoid";
    case Activation::gelu_tanh:
    case Activation::gelu_erf:
      break;
  }
  return "gelu";
}

void ActivationLayer::forward(Pass &, CMat<float> in, Mat<float> out) {
  switch (kind_) {
    case Activation::relu:
      return pointwise_kernels::relu_forward(flat(out), flat(in));
    case Activation::tanh:
      return tanh_forward<float>(flat(out), flat(in));
    case Activation::sigmoid:
      return pointwise_kernels::sigmoid_forward(flat(out), flat(in));
    case Activation::gelu_tanh:
      return gelu_forward<float>(flat(out), flat(in), GeluForm::tanh);
    case Activation::gelu_erf:
      return gelu_forward<float>(flat(out), flat(in), GeluForm::erf);
  }
}

void ActivationLayer::backward(Pass &, CMat<float> in, CMat<float> out, CMat<float> dout,
                               Mat<float> din) {
  if (din.extent(0) == 0) return;  // the model's first layer: nothing upstream
  switch (kind_) {
    case Activation::relu:
      return pointwise_kernels::relu_backward(flat(din), flat(in), flat(dout));
    case Activation::tanh:
      return tanh_backward<float>(flat(din), flat(out), flat(dout));
    case Activation::sigmoid:
      return pointwise_kernels::sigmoid_backward(flat(din), flat(out), flat(dout));
    case Activation::gelu_tanh:
      return gelu_backward<float>(flat(din), flat(in), flat(dout), GeluForm::tanh);
    case Activation::gelu_erf:
      return gelu_backward<float>(flat(din), flat(in), flat(dout), GeluForm::erf);
  }
}

std::string ActivationLayer::to_onnx(OnnxWriter &w, const std::string &x,
                                     const std::string &prefix) const {
  switch (kind_) {
    case Activation::relu:
      return w.node("Relu", {x}, prefix + "relu");
    case Activation::tanh:
      return w.node("Tanh", {x}, prefix + "tanh");
    case Activation::sigmoid:
      return w.node("Sigmoid", {x}, prefix + "sigmoid");
    case Activation::gelu_erf: {
      // 0.5 x (1 + erf(x / sqrt(2))): opset 17 has no Gelu.
      const std::string e = w.node(
          "Erf",
          {w.node("Div", {x, w.scalar(prefix + "sqrt2", 1.4142135623730951f)}, prefix + "div")},
          prefix + "erf");
      const std::string one = w.node("Add", {e, w.scalar(prefix + "one", 1.0f)}, prefix + "add");
      return w.node("Mul",
                    {w.node("Mul", {x, w.scalar(prefix + "half", 0.5f)}, prefix + "half_x"), one},
                    prefix + "gelu");
    }
    case Activation::gelu_tanh: {
      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      const std::string x3 =
          w.node("Mul", {w.node("Mul", {x, x}, prefix + "x2"), x}, prefix + "x3");
      const std::string inner =
          w.node("Add", {x, w.node("Mul", {x3, w.scalar(prefix + "c", 0.044715f)}, prefix + "cx3")},
                 prefix + "inner");
      const std::string t = w.node(
          "Tanh",
          {w.node("Mul", {inner, w.scalar(prefix + "k", 0.7978845608028654f)}, prefix + "scaled")},
          prefix + "tanh");
      const std::string one = w.node("Add", {t, w.scalar(prefix + "one", 1.0f)}, prefix + "add");
      return w.node("Mul",
                    {w.node("Mul", {x, w.scalar(prefix + "half", 0.5f)}, prefix + "half_x"), one},
                    prefix + "gelu");
    }
  }
  return x;
}

std::string ActivationLayer::describe() const {
  if (kind_ == Activation::gelu_tanh) return "gelu (tanh approximation)";
  if (kind_ == Activation::gelu_erf) return "gelu (erf)";
  return type();
}

Dropout::Dropout(const Shape &in, double p, uint64_t salt) : p_(p), salt_(salt) {
  in_ = in;
  out_ = in;
}

namespace {
uint64_t dropout_key(const Pass &pass, uint64_t salt) {
  using pointwise_kernels::mix;
  return mix(mix(mix(pass.seed ^ salt) + static_cast<uint64_t>(pass.rank)) + pass.step);
}
}  // namespace

void Dropout::forward(Pass &pass, CMat<float> in, Mat<float> out) {
  if (!pass.train || p_ == 0) {
    Kokkos::deep_copy(flat(out), flat(in));
    return;
  }
  pointwise_kernels::dropout(flat(out), flat(in), dropout_key(pass, salt_), static_cast<float>(p_));
}

void Dropout::backward(Pass &pass, CMat<float>, CMat<float>, CMat<float> dout, Mat<float> din) {
  if (din.extent(0) == 0) return;
  if (p_ == 0) {
    Kokkos::deep_copy(flat(din), flat(dout));
    return;
  }
  pointwise_kernels::dropout(flat(din), flat(dout), dropout_key(pass, salt_),
                             static_cast<float>(p_));
}

std::string Dropout::to_onnx(OnnxWriter &w, const std::string &x, const std::string &prefix) const {
  return w.node("Identity", {x}, prefix + "dropout");  // inference: dropout is the identity
}

std::string Dropout::describe() const {
  return fmt::format("dropout p={:g}", p_);
}

}  // namespace zrt::nn::model
