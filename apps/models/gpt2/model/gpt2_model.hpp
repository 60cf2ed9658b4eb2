// GPT-2: token and position embeddings, L pre-LayerNorm transformer blocks (causal
// multi-head attention, GELU MLP), a final LayerNorm, and the LM head tied to the token
// embedding, trained with cross-entropy. Forward and backward are written out layer by
// layer (as llm.c's train_gpt2.c); parameters and gradients live in a ParameterStore.
//
//   x   = wte[tokens] + wpe[t]                                  (B*T, C)
//   for each block l:
//     x = x + attn.proj(attention(attn.qkv(ln_1(x))))
//     x = x + mlp.proj(gelu(mlp.fc(ln_2(x))))
//   logits = ln_f(x) . wte^T                                    (B*T, V)
//   loss   = mean over positions of -log softmax(logits)[target]
#pragma once

#include <cstdint>

#include "activations.hpp"
#include "config.hpp"
#include "nn_types.hpp"
#include "parameter_layout.hpp"

namespace gpt2 {

template <class T>
class Gpt2Model {
 public:
  /// @p store must hold parameter_layout(config).
  Gpt2Model(const Gpt2Config &config, ParameterStore<T> &store);

  const Gpt2Config &config() const { return config_; }
  const ParamIds &ids() const { return ids_; }
  ParameterStore<T> &store() { return store_; }

  /// GPT-2's initialization, identical for a given seed on every rank and platform:
  /// weights and embeddings N(0, 0.02), the residual projections (attn.proj, mlp.proj)
  /// N(0, 0.02/sqrt(2L)), biases 0, LayerNorm gains 1.
  void init_parameters(uint64_t seed);

  /// Forward over tokens (B*T). With targets (B*T), computes the loss: returns its mean
  /// and leaves the probabilities in acts.logits for backward. Without (an empty view),
  /// leaves the logits (B*T, V) in acts.logits and returns 0.
  T forward(Activations<T> &acts, Tokens tokens, Tokens targets, int B, int Tn);

  /// Backward after forward(…, targets, B, Tn) on the same acts. @p dloss scales the
  /// gradient of the mean loss (1/accumulation steps, a loss scale). Writes every
  /// gradient through the store and calls grad_ready on each as soon as it is complete,
  /// in reverse layout order.
  void backward(Activations<T> &acts, Tokens tokens, Tokens targets, int B, int Tn, T dloss);

 private:
  void check_shape(const Activations<T> &acts, int B, int Tn) const;
  CVec<T> vec(int id);
  CMat<T> mat(int id);
  void gather_block(int l);
  void release_block(int l);
  // Block l from input (B*T, C) to acts.out[l]; with write_output false (recompute in
  // backward) the final residual sum, which forward already stored, is skipped.
  void block_forward(Activations<T> &acts, int l, const T *input, int B, int Tn, bool write_output);
  // Given acts.d_res = d(loss)/d(block l's output), leaves d(loss)/d(input) in it.
  void block_backward(Activations<T> &acts, int l, const T *input, int B, int Tn);

  Gpt2Config config_;
  ParameterStore<T> &store_;
  ParamIds ids_;
};

extern template class Gpt2Model<float>;
extern template class Gpt2Model<double>;

}  // namespace gpt2
