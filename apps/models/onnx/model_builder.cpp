#include "model_builder.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <stdexcept>

#include "tensor_blocks.hpp"

namespace zonnx {

std::string ModelBuilder::weight(const std::string &name, const std::vector<int64_t> &want,
                                 bool transpose) {
  StoredWeight w = read_(name);
  if (w.shape != want)
    throw std::invalid_argument(fmt::format("{} is [{}], {} needs [{}]", name,
                                            fmt::join(w.shape, ", "), model_,
                                            fmt::join(want, ", ")));
  if (!transpose)
    return g_.weight(name, w.shape, [values = std::move(w.values)](const weights::BlockSink &sink) {
      const std::vector<float> v = values();
      sink(v.data(), v.size());
    });
  return g_.weight(name, {want[1], want[0]},
                   [values = std::move(w.values), rows = want[0],
                    cols = want[1]](const weights::BlockSink &sink) {
                     weights::transposed_blocks(values(), rows, cols, sink);
                   });
}

std::string ModelBuilder::linear(const std::string &prefix, const std::string &x, int64_t out,
                                 int64_t in) {
  const std::string w = weight(prefix + ".weight", {out, in}, true);
  const std::string b = weight(prefix + ".bias", {out}, false);
  return g_.node("Add", {g_.node("MatMul", {x, w}, prefix + "_mm"), b}, prefix);
}

std::string ModelBuilder::layernorm(const std::string &prefix, const std::string &x, int64_t width,
                                    float eps) {
  const std::string w = weight(prefix + ".weight", {width}, false);
  const std::string b = weight(prefix + ".bias", {width}, false);
  return g_.node("LayerNormalization", {x, w, b}, prefix,
                 {{"axis", int64_t{-1}}, {"epsilon", eps}});
}

std::string ModelBuilder::attention(const std::string &q, const std::string &k,
                                    const std::string &v, int64_t heads, int64_t width,
                                    const std::string &mask, const std::string &hint) {
  const int64_t D = width / heads;
  const std::string shape = g_.ints({0, 0, heads, D}, {4});
  auto split = [&](const std::string &t, std::vector<int64_t> perm, const char *what) {
    return g_.node("Transpose", {g_.node("Reshape", {t, shape}, hint + what + "_heads")},
                   hint + what, {{"perm", std::move(perm)}});
  };
  const std::string qh = split(q, {0, 2, 1, 3}, "q");  // [B, H, T, D]
  const std::string kh = split(k, {0, 2, 3, 1}, "k");  // [B, H, D, T]
  const std::string vh = split(v, {0, 2, 1, 3}, "v");  // [B, H, T, D]
  std::string scores = g_.node("Mul",
                               {g_.node("MatMul", {qh, kh}, hint + "qk"),
                                g_.scalar(1.0f / std::sqrt(static_cast<float>(D)))},
                               hint + "scores");
  // exp(-1e9 - max) is 0 in fp32: as if the masked keys were left out.
  scores = g_.node("Where", {mask, scores, g_.scalar(-1e9f)}, hint + "masked");
  const std::string probs = g_.node("Softmax", {scores}, hint + "probs", {{"axis", int64_t{-1}}});
  std::string y = g_.node("MatMul", {probs, vh}, hint + "att");
  y = g_.node("Transpose", {y}, hint + "att_t", {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  return g_.node("Reshape", {y, g_.ints({0, 0, width}, {3})}, hint + "att_merged");
}

std::string ModelBuilder::gelu_tanh(const std::string &x, const std::string &hint) {
  const std::string cube = g_.node("Mul", {g_.node("Mul", {x, x}, hint + "x2"), x}, hint + "x3");
  const std::string inner =
      g_.node("Mul",
              {g_.node("Add", {x, g_.node("Mul", {cube, g_.scalar(0.044715f)}, hint + "cube_k")},
                       hint + "sum"),
               g_.scalar(static_cast<float>(std::sqrt(2.0 / M_PI)))},
              hint + "inner");
  return g_.node("Mul",
                 {g_.node("Mul", {x, g_.scalar(0.5f)}, hint + "half"),
                  g_.node("Add", {g_.scalar(1.0f), g_.node("Tanh", {inner}, hint + "tanh")},
                          hint + "one_plus")},
                 hint + "gelu");
}

std::string ModelBuilder::gelu_erf(const std::string &x, const std::string &hint) {
  const std::string e = g_.node(
      "Erf",
      {g_.node("Mul", {x, g_.scalar(static_cast<float>(1.0 / std::sqrt(2.0)))}, hint + "scaled")},
      hint + "erf");
  return g_.node("Mul",
                 {g_.node("Mul", {x, g_.scalar(0.5f)}, hint + "half"),
                  g_.node("Add", {g_.scalar(1.0f), e}, hint + "one_plus")},
                 hint + "gelu");
}

}  // namespace zonnx
