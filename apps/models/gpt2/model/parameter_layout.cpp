#include "parameter_layout.hpp"

#include <fmt/format.h>

namespace gpt2 {

std::vector<int> LayerParams::all() const {
  return {ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fcproj_w, fcproj_b};
}

std::vector<TensorSpec> parameter_layout(const Gpt2Config &cfg) {
  const int64_t C = cfg.channels;
  std::vector<TensorSpec> t;
  t.push_back({"wte", {cfg.vocab_size, C}, true});
  t.push_back({"wpe", {cfg.max_seq_len, C}, true});
  for (int l = 0; l < cfg.num_layers; ++l) {
    auto name = [&](const char *what) { return fmt::format("h{}.{}", l, what); };
    t.push_back({name("ln_1.weight"), {C}, false});
    t.push_back({name("ln_1.bias"), {C}, false});
    t.push_back({name("attn.qkv.weight"), {3 * C, C}, true});
    t.push_back({name("attn.qkv.bias"), {3 * C}, false});
    t.push_back({name("attn.proj.weight"), {C, C}, true});
    t.push_back({name("attn.proj.bias"), {C}, false});
    t.push_back({name("ln_2.weight"), {C}, false});
    t.push_back({name("ln_2.bias"), {C}, false});
    t.push_back({name("mlp.fc.weight"), {4 * C, C}, true});
    t.push_back({name("mlp.fc.bias"), {4 * C}, false});
    t.push_back({name("mlp.proj.weight"), {C, 4 * C}, true});
    t.push_back({name("mlp.proj.bias"), {C}, false});
  }
  t.push_back({"ln_f.weight", {C}, false});
  t.push_back({"ln_f.bias", {C}, false});
  return t;
}

ParamIds parameter_ids(const Gpt2Config &cfg) {
  ParamIds ids;
  ids.wte = 0;
  ids.wpe = 1;
  int next = 2;
  for (int l = 0; l < cfg.num_layers; ++l) {
    LayerParams p;
    for (int *field : {&p.ln1_w, &p.ln1_b, &p.qkv_w, &p.qkv_b, &p.proj_w, &p.proj_b, &p.ln2_w,
                       &p.ln2_b, &p.fc_w, &p.fc_b, &p.fcproj_w, &p.fcproj_b})
      *field = next++;
    ids.layers.push_back(p);
  }
  ids.lnf_w = next++;
  ids.lnf_b = next++;
  return ids;
}

}  // namespace gpt2
