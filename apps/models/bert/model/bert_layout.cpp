#include "bert_layout.hpp"

#include <fmt/format.h>

namespace bert {

std::vector<int> LayerIds::all() const {
  return {q_w, q_b, k_w, k_b, v_w, v_b, ao_w, ao_b, aln_w, aln_b, i_w, i_b, o_w, o_b, oln_w, oln_b};
}

std::vector<TensorSpec> parameter_layout(const BertConfig &cfg) {
  const int64_t H = cfg.hidden, I = cfg.intermediate, V = cfg.vocab_size;
  std::vector<TensorSpec> t;
  auto matrix = [&](std::string name, int64_t out, int64_t in) {
    t.push_back({name + ".weight", {out, in}, true});
    t.push_back({name + ".bias", {out}, false});
  };
  auto layernorm = [&](std::string name) {
    t.push_back({name + ".weight", {H}, false});
    t.push_back({name + ".bias", {H}, false});
  };
  t.push_back({"bert.embeddings.word_embeddings.weight", {V, H}, true});
  t.push_back({"bert.embeddings.position_embeddings.weight", {cfg.max_positions, H}, true});
  t.push_back({"bert.embeddings.token_type_embeddings.weight", {cfg.type_vocab_size, H}, true});
  layernorm("bert.embeddings.LayerNorm");
  for (int l = 0; l < cfg.num_layers; ++l) {
    const std::string p = fmt::format("bert.encoder.layer.{}.", l);
    matrix(p + "attention.self.query", H, H);
    matrix(p + "attention.self.key", H, H);
    matrix(p + "attention.self.value", H, H);
    matrix(p + "attention.output.dense", H, H);
    layernorm(p + "attention.output.LayerNorm");
    matrix(p + "intermediate.dense", I, H);
    matrix(p + "output.dense", H, I);
    layernorm(p + "output.LayerNorm");
  }
  matrix("bert.pooler.dense", H, H);
  matrix("cls.seq_relationship", 2, H);
  matrix("cls.predictions.transform.dense", H, H);
  layernorm("cls.predictions.transform.LayerNorm");
  t.push_back({"cls.predictions.bias", {V}, false});
  return t;
}

BertIds parameter_ids(const BertConfig &cfg) {
  BertIds ids;
  int next = 0;
  for (int *field : {&ids.word, &ids.position, &ids.token_type, &ids.emb_ln_w, &ids.emb_ln_b})
    *field = next++;
  for (int l = 0; l < cfg.num_layers; ++l) {
    LayerIds p;
    for (int *field : {&p.q_w, &p.q_b, &p.k_w, &p.k_b, &p.v_w, &p.v_b, &p.ao_w, &p.ao_b, &p.aln_w,
                       &p.aln_b, &p.i_w, &p.i_b, &p.o_w, &p.o_b, &p.oln_w, &p.oln_b})
      *field = next++;
    ids.layers.push_back(p);
  }
  for (int *field : {&ids.pooler_w, &ids.pooler_b, &ids.nsp_w, &ids.nsp_b, &ids.transform_w,
                     &ids.transform_b, &ids.transform_ln_w, &ids.transform_ln_b, &ids.decoder_b})
    *field = next++;
  return ids;
}

}  // namespace bert
