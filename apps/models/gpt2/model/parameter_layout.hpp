// GPT-2's parameters as named tensors, in registration order:
//   wte (V,C), wpe (maxT,C),
//   per layer l: h{l}.ln_1.weight (C), h{l}.ln_1.bias (C),
//                h{l}.attn.qkv.weight (3C,C), h{l}.attn.qkv.bias (3C),
//                h{l}.attn.proj.weight (C,C), h{l}.attn.proj.bias (C),
//                h{l}.ln_2.weight (C), h{l}.ln_2.bias (C),
//                h{l}.mlp.fc.weight (4C,C), h{l}.mlp.fc.bias (4C),
//                h{l}.mlp.proj.weight (C,4C), h{l}.mlp.proj.bias (C),
//   ln_f.weight (C), ln_f.bias (C).
// Weights are (out, in), row-major, as in llm.c (Hugging Face's Conv1D stores (in, out)).
// Backward completes gradients in exactly the reverse of this order (ln_f first, wte
// last), which is the order the engine forms its gradient buckets in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <zerort/nn/tensor_spec.hpp>
#include "config.hpp"

namespace gpt2 {

using zrt::nn::TensorSpec;

/// Tensor ids of one transformer block, indexes into the layout.
struct LayerParams {
  int ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fcproj_w, fcproj_b;
  /// All twelve, in registration order.
  std::vector<int> all() const;
};

/// Where each tensor is in the layout.
struct ParamIds {
  int wte, wpe, lnf_w, lnf_b;
  std::vector<LayerParams> layers;
};

std::vector<TensorSpec> parameter_layout(const Gpt2Config &config);
ParamIds parameter_ids(const Gpt2Config &config);

}  // namespace gpt2
