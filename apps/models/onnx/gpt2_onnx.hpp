// GPT-2's inference graph in ONNX, from zrt-gpt2's weights:
//   input_ids  int64 [batch, seq]          token ids (seq at most the model's positions)
//   logits     float [batch, seq, vocab]   next-token logits, the causal mask applied
// What zrt-gpt2's forward pass computes: pre-LN blocks, LayerNormalization (epsilon 1e-5,
// opset 17's own op), causal attention, the tanh GELU from basic ops, the LM head tied to
// wte. Batch and sequence length are dynamic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model_builder.hpp"

namespace zonnx {

struct Gpt2Shape {
  int layers = 0, heads = 0;
  int64_t channels = 0, vocab = 0, positions = 0;
};

/// Adds the graph to @p g, checking each weight's shape (its values are read once, in order,
/// when @p g is written). Throws std::invalid_argument naming a tensor whose shape is not
/// the one @p shape implies.
void build_gpt2(OnnxGraph &g, const Gpt2Shape &shape, const WeightReader &read);

}  // namespace zonnx
