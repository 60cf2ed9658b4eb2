#include "bert_onnx.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace zonnx {
namespace {

constexpr int64_t kBool = 9;  // ONNX's TensorProto element type for a Cast to bool

class BertBuilder : ModelBuilder {
 public:
  BertBuilder(OnnxGraph &g, const BertShape &s, const WeightReader &read)
      : ModelBuilder(g, read,
                     fmt::format("a BERT of {} layers, hidden {} and {} heads", s.layers, s.hidden,
                                 s.heads)),
        s_(s) {}

  void build() {
    const int64_t H = s_.hidden, I = s_.intermediate, V = s_.vocab;
    const float eps = s_.layer_norm_eps;
    const std::vector<Dim> tokens = {std::string("batch"), std::string("seq")};
    for (const char *name : {"input_ids", "token_type_ids", "attention_mask"})
      g_.input(name, ElemType::int64, tokens);
    g_.output("mlm_logits", ElemType::float32, {std::string("batch"), std::string("seq"), V});
    g_.output("nsp_logits", ElemType::float32, {std::string("batch"), int64_t{2}});
    g_.output("pooled_output", ElemType::float32, {std::string("batch"), H});

    const std::string shape = g_.node("Shape", {"input_ids"}, "ids_shape");
    const std::string seq = g_.node("Gather", {shape, g_.ints({1}, {})}, "seq", {{"axis", 0}});
    const std::string positions =
        g_.node("Range", {g_.ints({0}, {}), seq, g_.ints({1}, {})}, "positions");
    // The padding mask on the keys: [batch, 1, 1, seq].
    const std::string mask = g_.node(
        "Unsqueeze",
        {g_.node("Cast", {"attention_mask"}, "mask_bool", {{"to", kBool}}), g_.ints({1, 2}, {2})},
        "key_mask");

    const std::string word = weight("bert.embeddings.word_embeddings.weight", {V, H}, false);
    const std::string pos =
        weight("bert.embeddings.position_embeddings.weight", {s_.positions, H}, false);
    const std::string type =
        weight("bert.embeddings.token_type_embeddings.weight", {s_.type_vocab, H}, false);
    std::string x = g_.node("Add",
                            {g_.node("Add",
                                     {g_.node("Gather", {word, "input_ids"}, "word"),
                                      g_.node("Gather", {pos, positions}, "position")},
                                     "word_position"),
                             g_.node("Gather", {type, "token_type_ids"}, "token_type")},
                            "embedding_sum");
    x = layernorm("bert.embeddings.LayerNorm", x, H, eps);
    for (int l = 0; l < s_.layers; ++l) {
      const std::string p = fmt::format("bert.encoder.layer.{}.", l);
      const std::string q = linear(p + "attention.self.query", x, H, H);
      const std::string k = linear(p + "attention.self.key", x, H, H);
      const std::string v = linear(p + "attention.self.value", x, H, H);
      const std::string att = attention(q, k, v, s_.heads, H, mask, p);
      const std::string x1 = layernorm(
          p + "attention.output.LayerNorm",
          g_.node("Add", {x, linear(p + "attention.output.dense", att, H, H)}, p + "res1"), H, eps);
      const std::string inter = gelu_erf(linear(p + "intermediate.dense", x1, I, H), p);
      x = layernorm(p + "output.LayerNorm",
                    g_.node("Add", {x1, linear(p + "output.dense", inter, H, I)}, p + "res2"), H,
                    eps);
    }
    // NSP: the pooler on [CLS] (position 0), then the 2-way classifier.
    const std::string cls = g_.node("Gather", {x, g_.ints({0}, {})}, "cls", {{"axis", 1}});
    const std::string pooled = g_.node("Tanh", {linear("bert.pooler.dense", cls, H, H)}, "pooled");
    g_.name_output(pooled, "pooled_output");
    g_.name_output(linear("cls.seq_relationship", pooled, 2, H), "nsp_logits");
    // MLM at every position: transform, then the decoder tied to the word embeddings.
    const std::string t = layernorm(
        "cls.predictions.transform.LayerNorm",
        gelu_erf(linear("cls.predictions.transform.dense", x, H, H), "cls.predictions.transform."),
        H, eps);
    const std::string decoder =
        g_.node("Transpose", {word}, "decoder", {{"perm", std::vector<int64_t>{1, 0}}});
    g_.name_output(g_.node("Add",
                           {g_.node("MatMul", {t, decoder}, "mlm_mm"),
                            weight("cls.predictions.bias", {V}, false)},
                           "mlm"),
                   "mlm_logits");
  }

 private:
  const BertShape &s_;
};

}  // namespace

void build_bert(OnnxGraph &g, const BertShape &shape, const WeightReader &read) {
  if (shape.layers <= 0 || shape.heads <= 0 || shape.hidden % shape.heads != 0)
    throw std::invalid_argument(fmt::format("not a BERT shape: {} layers, hidden {}, {} heads",
                                            shape.layers, shape.hidden, shape.heads));
  BertBuilder(g, shape, read).build();
}

}  // namespace zonnx
