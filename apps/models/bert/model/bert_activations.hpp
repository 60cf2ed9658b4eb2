// The activations BERT's forward keeps for backward, and backward's scratch, carved out of
// one allocation sized for (B, T) at most and for every position masked at most. All
// (rows, cols) row-major, rows = B*T positions unless noted; P = masked positions.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <zerort/nn/tensor.hpp>
#include "bert_config.hpp"

namespace bert {

using zrt::nn::MemSpace;

/// One encoder layer's activations (pointers into BertActivations' storage).
template <class T>
struct LayerActivations {
  T *qkvp;                 // (3, B, A, T, hs) queries, keys, values by head
  T *att;                  // (B, A, T, T) softmax of the scores over the real tokens
  T *ctx;                  // (BT, H) attention output, input of attention.output.dense
  T *res1;                 // (BT, H) x + attention.output.dense(ctx), before its LayerNorm
  T *aln_mean, *aln_rstd;  // (BT)
  T *h1;                   // (BT, H) attention.output.LayerNorm's output
  T *fch;                  // (BT, I) intermediate.dense output, before GELU
  T *fch_gelu;             // (BT, I) its GELU, input of output.dense
  T *res2;                 // (BT, H) h1 + output.dense(...), before its LayerNorm
  T *oln_mean, *oln_rstd;  // (BT)
  T *out;                  // (BT, H) the layer's output, the next one's input
};

template <class T>
class BertActivations {
 public:
  /// For micro-batches of up to @p max_batch sequences of @p max_seq tokens with up to
  /// @p max_masked masked positions in all (< 0: every position).
  BertActivations(const BertConfig &config, int max_batch, int max_seq, int max_masked = -1);

  int max_batch() const { return max_batch_; }
  int max_seq() const { return max_seq_; }
  int max_masked() const { return max_masked_; }
  int64_t bytes() const { return static_cast<int64_t>(storage_.size() * sizeof(T)); }
  /// bytes() of BertActivations(config, max_batch, max_seq, max_masked), from the same list
  /// of fields with nothing allocated (zrt-plan). Needs no Kokkos.
  static int64_t planned_bytes(const BertConfig &config, int max_batch, int max_seq,
                               int max_masked = -1);
  LayerActivations<T> &layer(int l) { return layers_[static_cast<size_t>(l)]; }

  // Embeddings.
  T *emb_sum;              // (BT, H) word + position + token type
  T *emb_mean, *emb_rstd;  // (BT)
  T *emb_out;              // (BT, H) their LayerNorm: layer 0's input
  // NSP head, on the B [CLS] rows.
  T *pool_in;     // (B, H) the last layer's output at [CLS]
  T *pool_pre;    // (B, H) pooler.dense output
  T *pooled;      // (B, H) its tanh: the pooled output
  T *nsp_logits;  // (B, 2) logits; probabilities after the loss; then their gradient
  T *nsp_losses;  // (B)
  // MLM head, on the P masked rows.
  T *mlm_in;               // (P, H) the last layer's output at the masked positions
  T *mlm_t;                // (P, H) transform.dense output, before GELU
  T *mlm_g;                // (P, H) its GELU
  T *mlm_ln;               // (P, H) transform.LayerNorm output, the decoder's input
  T *mlm_mean, *mlm_rstd;  // (P)
  T *mlm_logits;           // (P, V) logits; probabilities; then their gradient
  T *mlm_losses;           // (P)
  // Scratch.
  T *qkv;                  // (3 BT, H) q, k, v projections, planar; in backward their gradient
  T *yp;                   // (BT, H) attention output by head; in backward the output's gradient
  T *d_x;                  // (BT, H) gradient of a layer's output, then of its input
  T *d_y;                  // (BT, H) gradient inside a layer
  T *d_ctx;                // (BT, H) gradient of the attention output
  T *d_fch;                // (BT, I)
  T *d_att;                // (B, A, T, T)
  T *d_qkvp;               // (3, B, A, T, hs)
  T *d_head_a, *d_head_b;  // (max(P, B), H) the heads' gradients

 private:
  struct CountOnly {};
  BertActivations(const BertConfig &config, int max_batch, int max_seq, int max_masked, CountOnly);
  // Every field with its elements, in the order they are carved.
  std::vector<std::pair<T **, int64_t>> fields(const BertConfig &config);

  int max_batch_, max_seq_, max_masked_;
  std::vector<LayerActivations<T>> layers_;
  Kokkos::View<T *, MemSpace> storage_;
  int64_t counted_ = 0;
};

extern template class BertActivations<float>;
extern template class BertActivations<double>;

}  // namespace bert
