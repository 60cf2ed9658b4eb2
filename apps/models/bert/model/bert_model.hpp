// BERT (Devlin et al. 2018) for pretraining, as Hugging Face's BertForPreTraining computes
// it without dropout: embeddings, L post-LayerNorm encoder layers, the MLM and NSP heads.
// Forward and backward are written out layer by layer (as GPT-2's are) over nn/'s
// layers; parameters and gradients live in a ParameterStore.
//
//   x = LN(word[ids] + position[t] + token_type[segment])                 (BT, H)
//   for each layer:
//     q, k, v = x Wq^T + bq, x Wk^T + bk, x Wv^T + bv
//     x1 = LN(x + attention(q, k, v; padding mask) Wo^T + bo)
//     x  = LN(x1 + gelu(x1 Wi^T + bi) Wo2^T + bo2)                        (erf GELU)
//   NSP:  pooled = tanh(x[CLS] Wp^T + bp);  nsp = pooled Ws^T + bs         (B, 2)
//   MLM:  at the masked positions only (Google's gather_indexes):
//         h = LN(gelu(x[masked] Wt^T + bt));  mlm = h word^T + decoder bias (P, V)
//   loss = mean over masked positions of CE(mlm, label) + mean over sequences of CE(nsp)
#pragma once

#include <cstdint>

#include <zerort/nn/parameter_store.hpp>
#include "bert_activations.hpp"
#include "bert_batch.hpp"
#include "bert_config.hpp"
#include "bert_layout.hpp"

namespace bert {

using zrt::nn::ParameterStore;

/// What forward measured on one micro-batch.
struct BertLosses {
  double mlm = 0;           // mean cross-entropy over the P masked positions
  double nsp = 0;           // mean cross-entropy over the B sequences
  int64_t mlm_correct = 0;  // masked positions whose most likely token is the label
  int64_t mlm_count = 0;    // P
  int64_t nsp_correct = 0;
  int64_t nsp_count = 0;  // B
  double total() const { return mlm + nsp; }
};

template <class T>
class BertModel {
 public:
  /// @p store must hold parameter_layout(config).
  BertModel(const BertConfig &config, ParameterStore<T> &store);

  const BertConfig &config() const { return config_; }
  const BertIds &ids() const { return ids_; }
  ParameterStore<T> &store() { return store_; }

  /// BERT's initialization (Hugging Face's _init_weights), the same for a seed on every
  /// rank: matrices and embeddings N(0, 0.02), the [PAD] row of the word embeddings 0,
  /// biases 0, LayerNorm gains 1.
  void init_parameters(uint64_t seed);

  /// Forward over @p batch; leaves the heads' probabilities in acts for backward.
  BertLosses forward(BertActivations<T> &acts, const BertBatch &batch);

  /// Backward after forward on the same acts and batch. The gradient of the loss with
  /// respect to each masked position's cross-entropy is @p dmlm, to each sequence's NSP
  /// cross-entropy @p dnsp (1/P and 1/B give the gradient of BertLosses::total()). Writes
  /// every gradient through the store and calls grad_ready on each as soon as it is
  /// complete, in reverse layout order.
  void backward(BertActivations<T> &acts, const BertBatch &batch, T dmlm, T dnsp);

 private:
  void check_shape(const BertActivations<T> &acts, const BertBatch &batch) const;
  zrt::nn::CVec<T> vec(int id);
  zrt::nn::CMat<T> mat(int id);
  void gather(const std::vector<int> &ids);
  void release(const std::vector<int> &ids);
  void layer_forward(BertActivations<T> &acts, int l, const T *input, const BertBatch &batch);
  // Given acts.d_x = d(loss)/d(layer l's output), leaves d(loss)/d(its input) in it.
  void layer_backward(BertActivations<T> &acts, int l, const T *input, const BertBatch &batch);

  BertConfig config_;
  ParameterStore<T> &store_;
  BertIds ids_;
};

extern template class BertModel<float>;
extern template class BertModel<double>;

}  // namespace bert
