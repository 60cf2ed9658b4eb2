// BERT's parameters as named tensors, named as Hugging Face's BertForPreTraining names
// them (so a checkpoint exported with these names loads there one to one), in
// registration order:
//   bert.embeddings.word_embeddings.weight (V,H)        also the MLM decoder's weight (tied)
//   bert.embeddings.position_embeddings.weight (P,H)
//   bert.embeddings.token_type_embeddings.weight (2,H)
//   bert.embeddings.LayerNorm.weight (H), .bias (H)
//   per layer l, prefix bert.encoder.layer.{l}.:
//     attention.self.query.weight (H,H), .bias (H)   likewise key, value
//     attention.output.dense.weight (H,H), .bias (H)
//     attention.output.LayerNorm.weight (H), .bias (H)
//     intermediate.dense.weight (I,H), .bias (I)
//     output.dense.weight (H,I), .bias (H)
//     output.LayerNorm.weight (H), .bias (H)
//   bert.pooler.dense.weight (H,H), .bias (H)
//   cls.seq_relationship.weight (2,H), .bias (2)                       NSP head
//   cls.predictions.transform.dense.weight (H,H), .bias (H)            MLM head
//   cls.predictions.transform.LayerNorm.weight (H), .bias (H)
//   cls.predictions.bias (V)                                           the decoder's bias
// Weights are (out, in), row-major, as torch.nn.Linear's. Backward completes gradients in
// exactly the reverse of this order (the MLM head first, the word embeddings last, since the
// decoder and the embedding share them), the order the engine forms its buckets in.
#pragma once

#include <vector>

#include <zerort/nn/tensor_spec.hpp>
#include "bert_config.hpp"

namespace bert {

using zrt::nn::TensorSpec;

/// Tensor ids of one encoder layer, indexes into the layout.
struct LayerIds {
  int q_w, q_b, k_w, k_b, v_w, v_b, ao_w, ao_b, aln_w, aln_b, i_w, i_b, o_w, o_b, oln_w, oln_b;
  /// All sixteen, in registration order.
  std::vector<int> all() const;
};

struct BertIds {
  int word, position, token_type, emb_ln_w, emb_ln_b;
  std::vector<LayerIds> layers;
  int pooler_w, pooler_b, nsp_w, nsp_b, transform_w, transform_b, transform_ln_w, transform_ln_b,
      decoder_b;
};

std::vector<TensorSpec> parameter_layout(const BertConfig &config);
BertIds parameter_ids(const BertConfig &config);

}  // namespace bert
