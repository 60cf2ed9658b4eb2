// BERT's inference graph in ONNX, from zrt-bert's weights (BertForPreTraining):
//   input_ids       int64 [batch, seq]   WordPiece ids
//   token_type_ids  int64 [batch, seq]   0 for segment A (with [CLS] and its [SEP]), 1 for B
//   attention_mask  int64 [batch, seq]   1 for real tokens, 0 for padding (keys left out)
//   mlm_logits      float [batch, seq, vocab]  the MLM head at every position
//   nsp_logits      float [batch, 2]           the NSP head on [CLS]
//   pooled_output   float [batch, hidden]      tanh(pooler.dense(x[CLS]))
// What zrt-bert's forward pass computes: post-LN encoder layers, erf GELU from basic ops,
// LayerNormalization with the model's epsilon, the MLM decoder tied to the word embeddings.
#pragma once

#include <cstdint>

#include "model_builder.hpp"

namespace zonnx {

struct BertShape {
  int layers = 0, heads = 0;
  int64_t hidden = 0, intermediate = 0, vocab = 0, positions = 0, type_vocab = 0;
  float layer_norm_eps = 1e-12f;
};

/// Adds the graph to @p g, checking each weight's shape (its values are read once, when
/// @p g is written). Throws std::invalid_argument naming a tensor whose shape is not the
/// one @p shape implies.
void build_bert(OnnxGraph &g, const BertShape &shape, const WeightReader &read);

}  // namespace zonnx
