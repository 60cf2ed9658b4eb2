#include "gpt2_onnx.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <stdexcept>

#include "hf_names.hpp"

namespace zonnx {
namespace {

// ONNX's TensorProto element type for a Cast to bool.
constexpr int64_t kBool = 9;

class Gpt2Builder {
 public:
  Gpt2Builder(OnnxGraph &g, const Gpt2Shape &s, const WeightReader &read)
      : g_(g), s_(s), read_(read) {}

  void build() {
    const int64_t C = s_.channels;
    g_.input("input_ids", ElemType::int64, {std::string("batch"), std::string("seq")});
    g_.output("logits", ElemType::float32, {std::string("batch"), std::string("seq"), s_.vocab});

    // Positions 0..seq-1, and the causal mask [seq, seq] (true on and below the diagonal).
    const std::string shape = g_.node("Shape", {"input_ids"}, "ids_shape");
    const std::string seq = g_.node("Gather", {shape, g_.ints({1}, {})}, "seq", {{"axis", 0}});
    const std::string positions =
        g_.node("Range", {g_.ints({0}, {}), seq, g_.ints({1}, {})}, "positions");
    const std::string seq1 = g_.node("Unsqueeze", {seq, g_.ints({0}, {1})}, "seq1");
    const std::string square = g_.node("Concat", {seq1, seq1}, "square", {{"axis", 0}});
    const std::string ones = g_.node("Expand", {g_.scalar(1.0f), square}, "ones");
    const std::string lower = g_.node("Trilu", {ones}, "lower", {{"upper", 0}});
    mask_ = g_.node("Cast", {lower}, "causal_mask", {{"to", kBool}});
    masked_ = g_.scalar(-1e9f);  // exp(-1e9 - max) is 0 in fp32: as if left out

    const std::string wte = weight("wte", {s_.vocab, C}, false);
    const std::string wpe = weight("wpe", {s_.positions, C}, false);
    std::string x = g_.node("Add",
                            {g_.node("Gather", {wte, "input_ids"}, "tokens"),
                             g_.node("Gather", {wpe, positions}, "pos")},
                            "embedded");
    for (int l = 0; l < s_.layers; ++l)
      x = block(l, x);
    x = layernorm("ln_f", x);
    // The LM head is wte itself: [C, V] by a Transpose ONNX Runtime folds at load.
    const std::string head =
        g_.node("Transpose", {wte}, "lm_head", {{"perm", std::vector<int64_t>{1, 0}}});
    g_.name_output(g_.node("MatMul", {x, head}, "logits_mm"), "logits");
  }

 private:
  // A weight of the layout, checked against @p want; a matrix [out, in] is stored [in, out]
  // so that the graph multiplies by it directly.
  std::string weight(const std::string &name, const std::vector<int64_t> &want, bool transpose) {
    auto [shape, values] = read_(name);
    if (shape != want)
      throw std::invalid_argument(fmt::format(
          "{} is [{}], a GPT-2 of {} layers, {} heads and {} channels needs [{}]", name,
          fmt::join(shape, ", "), s_.layers, s_.heads, s_.channels, fmt::join(want, ", ")));
    if (transpose) values = weights::transposed(values, shape);
    return g_.weight(name, shape, values);
  }

  std::string layernorm(const std::string &prefix, const std::string &x) {
    const std::string w = weight(prefix + ".weight", {s_.channels}, false);
    const std::string b = weight(prefix + ".bias", {s_.channels}, false);
    return g_.node("LayerNormalization", {x, w, b}, prefix,
                   {{"axis", int64_t{-1}}, {"epsilon", 1e-5f}});
  }

  // x @ W^T + b for the layout's W [out, in].
  std::string linear(const std::string &prefix, const std::string &x, int64_t out, int64_t in) {
    const std::string w = weight(prefix + ".weight", {out, in}, true);
    const std::string b = weight(prefix + ".bias", {out}, false);
    return g_.node("Add", {g_.node("MatMul", {x, w}, prefix + "_mm"), b}, prefix);
  }

  std::string block(int l, const std::string &x) {
    const int64_t C = s_.channels, H = s_.heads, D = C / H;
    const std::string p = fmt::format("h{}.", l);
    // Attention half: x + proj(attention(qkv(ln_1(x))))
    const std::string qkv = linear(p + "attn.qkv", layernorm(p + "ln_1", x), 3 * C, C);
    const auto parts =
        g_.nodes("Split", {qkv, g_.ints({C, C, C}, {3})}, p + "split", 3, {{"axis", int64_t{-1}}});
    const std::string heads = g_.ints({0, 0, H, D}, {4});
    auto split_heads = [&](const std::string &t, std::vector<int64_t> perm, const char *hint) {
      return g_.node("Transpose", {g_.node("Reshape", {t, heads}, p + hint + "_heads")}, p + hint,
                     {{"perm", std::move(perm)}});
    };
    const std::string q = split_heads(parts[0], {0, 2, 1, 3}, "q");  // [B, H, T, D]
    const std::string k = split_heads(parts[1], {0, 2, 3, 1}, "k");  // [B, H, D, T]
    const std::string v = split_heads(parts[2], {0, 2, 1, 3}, "v");  // [B, H, T, D]
    std::string scores = g_.node(
        "Mul",
        {g_.node("MatMul", {q, k}, p + "qk"), g_.scalar(1.0f / std::sqrt(static_cast<float>(D)))},
        p + "scores");
    scores = g_.node("Where", {mask_, scores, masked_}, p + "masked");
    const std::string probs = g_.node("Softmax", {scores}, p + "probs", {{"axis", int64_t{-1}}});
    std::string y = g_.node("MatMul", {probs, v}, p + "att");
    y = g_.node("Transpose", {y}, p + "att_t", {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
    y = g_.node("Reshape", {y, g_.ints({0, 0, C}, {3})}, p + "att_merged");
    const std::string res = g_.node("Add", {x, linear(p + "attn.proj", y, C, C)}, p + "res1");

    // MLP half: res + proj(gelu(fc(ln_2(res)))), GELU's tanh form.
    const std::string f = linear(p + "mlp.fc", layernorm(p + "ln_2", res), 4 * C, C);
    const std::string cube = g_.node("Mul", {g_.node("Mul", {f, f}, p + "f2"), f}, p + "f3");
    const std::string inner = g_.node(
        "Mul",
        {g_.node("Add", {f, g_.node("Mul", {cube, g_.scalar(0.044715f)}, p + "cube_k")}, p + "sum"),
         g_.scalar(static_cast<float>(std::sqrt(2.0 / M_PI)))},
        p + "inner");
    const std::string gelu = g_.node(
        "Mul",
        {g_.node("Mul", {f, g_.scalar(0.5f)}, p + "half"),
         g_.node("Add", {g_.scalar(1.0f), g_.node("Tanh", {inner}, p + "tanh")}, p + "one_plus")},
        p + "gelu");
    return g_.node("Add", {res, linear(p + "mlp.proj", gelu, C, 4 * C)}, p + "res2");
  }

  OnnxGraph &g_;
  const Gpt2Shape &s_;
  const WeightReader &read_;
  std::string mask_, masked_;
};

}  // namespace

void build_gpt2(OnnxGraph &g, const Gpt2Shape &shape, const WeightReader &read) {
  if (shape.layers <= 0 || shape.heads <= 0 || shape.channels % shape.heads != 0)
    throw std::invalid_argument(fmt::format("not a GPT-2 shape: {} layers, {} heads, {} channels",
                                            shape.layers, shape.heads, shape.channels));
  Gpt2Builder(g, shape, read).build();
}

}  // namespace zonnx
