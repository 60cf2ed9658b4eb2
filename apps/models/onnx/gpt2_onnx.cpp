#include "gpt2_onnx.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "model_builder.hpp"

namespace zonnx {
namespace {

// ONNX's TensorProto element type for a Cast to bool.
constexpr int64_t kBool = 9;

class Gpt2Builder : ModelBuilder {
 public:
  Gpt2Builder(OnnxGraph &g, const Gpt2Shape &s, const WeightReader &read)
      : ModelBuilder(g, read,
                     fmt::format("a GPT-2 of {} layers, {} heads and {} channels", s.layers,
                                 s.heads, s.channels)),
        s_(s) {}

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
    const std::string mask = g_.node("Cast", {lower}, "causal_mask", {{"to", kBool}});

    const std::string wte = weight("wte", {s_.vocab, C}, false);
    const std::string wpe = weight("wpe", {s_.positions, C}, false);
    std::string x = g_.node("Add",
                            {g_.node("Gather", {wte, "input_ids"}, "tokens"),
                             g_.node("Gather", {wpe, positions}, "pos")},
                            "embedded");
    for (int l = 0; l < s_.layers; ++l) {
      const std::string p = fmt::format("h{}.", l);
      // x + proj(attention(qkv(ln_1(x)))), then res + proj(gelu(fc(ln_2(res))))
      const std::string qkv = linear(p + "attn.qkv", layernorm(p + "ln_1", x, C, 1e-5f), 3 * C, C);
      const auto qkv3 = g_.nodes("Split", {qkv, g_.ints({C, C, C}, {3})}, p + "split", 3,
                                 {{"axis", int64_t{-1}}});
      const std::string y = attention(qkv3[0], qkv3[1], qkv3[2], s_.heads, C, mask, p);
      const std::string res = g_.node("Add", {x, linear(p + "attn.proj", y, C, C)}, p + "res1");
      const std::string f = linear(p + "mlp.fc", layernorm(p + "ln_2", res, C, 1e-5f), 4 * C, C);
      x = g_.node("Add", {res, linear(p + "mlp.proj", gelu_tanh(f, p), C, 4 * C)}, p + "res2");
    }
    x = layernorm("ln_f", x, C, 1e-5f);
    // The LM head is wte itself: [C, V] by a Transpose ONNX Runtime folds at load.
    const std::string head =
        g_.node("Transpose", {wte}, "lm_head", {{"perm", std::vector<int64_t>{1, 0}}});
    g_.name_output(g_.node("MatMul", {x, head}, "logits_mm"), "logits");
  }

 private:
  const Gpt2Shape &s_;
};

}  // namespace

void build_gpt2(OnnxGraph &g, const Gpt2Shape &shape, const WeightReader &read) {
  if (shape.layers <= 0 || shape.heads <= 0 || shape.channels % shape.heads != 0)
    throw std::invalid_argument(fmt::format("not a GPT-2 shape: {} layers, {} heads, {} channels",
                                            shape.layers, shape.heads, shape.channels));
  Gpt2Builder(g, shape, read).build();
}

}  // namespace zonnx
