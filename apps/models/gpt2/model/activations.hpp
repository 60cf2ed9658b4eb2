// The activations forward keeps for backward, and backward's scratch, carved out of one
// allocation sized for (B, T) at most. With recompute (and for inference) only the block
// outputs are kept per layer and one block's worth of activations is shared: backward
// recomputes each block's forward right before its backward (full activation
// checkpointing per block, as Megatron-LM's "full" recompute). With offload, two blocks'
// worth are shared and the others wait in host memory (block_offload.hpp).
#pragma once

#include <zerort/zerort.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "block_offload.hpp"
#include "config.hpp"
#include "nn_types.hpp"

namespace gpt2 {

enum class ActivationMode {
  keep,       // training: every block's activations kept from forward to backward
  recompute,  // training: block outputs kept, the rest recomputed in backward
  offload,    // training: block outputs kept, the rest pushed to host memory and back
  inference,  // forward only: no backward scratch
};

/// One transformer block's activations. Pointers into Activations' storage.
template <class T>
struct BlockActivations {
  T *ln1;       // (B*T, C)   ln_1 output
  T *ln1_mean;  // (B*T)
  T *ln1_rstd;  // (B*T)
  T *qkvp;      // (3, B, NH, T, hs) queries, keys and values by head
  T *att;       // (B, NH, T, T) causal softmax of q.k / sqrt(hs)
  T *atty;      // (B*T, C)   attention output, input of attn.proj
  T *res2;      // (B*T, C)   residual stream after attention
  T *ln2;       // (B*T, C)   ln_2 output
  T *ln2_mean;  // (B*T)
  T *ln2_rstd;  // (B*T)
  T *fch;       // (B*T, 4C)  mlp.fc output, before GELU
  T *fch_gelu;  // (B*T, 4C)  GELU output, input of mlp.proj
};

template <class T>
class Activations {
 public:
  /// @p context: the zerort context whose pinned host memory takes the offloaded blocks
  /// (offload mode only).
  Activations(const Gpt2Config &config, int max_batch, int max_seq, ActivationMode mode,
              zrt_context_h context = nullptr);

  int max_batch() const { return max_batch_; }
  int max_seq() const { return max_seq_; }
  ActivationMode mode() const { return mode_; }
  /// Block @p l's activations (with recompute/inference, the one shared set; with
  /// offload, one of two).
  BlockActivations<T> &block(int l) {
    return blocks_[mode_ == ActivationMode::keep      ? static_cast<size_t>(l)
                   : mode_ == ActivationMode::offload ? static_cast<size_t>(l) % blocks_.size()
                                                      : 0];
  }
  /// Bytes of the allocation: what stays resident.
  int64_t bytes() const { return static_cast<int64_t>(storage_.size() * sizeof(T)); }
  /// bytes() of Activations(config, max_batch, max_seq, mode), computed by the same carving
  /// with nothing allocated (zrt-plan). Needs no Kokkos.
  static int64_t planned_bytes(const Gpt2Config &config, int max_batch, int max_seq,
                               ActivationMode mode);
  /// The most the offload holds in pinned host memory (offload mode): the carved fields of
  /// every block but the two that stay.
  static int64_t planned_offloaded_bytes(const Gpt2Config &config, int max_batch, int max_seq);
  /// The blocks' offload (offload mode), else null.
  BlockOffload *offload() { return offload_.get(); }
  /// Held in host memory by the offload (zeros without).
  OffloadMemory offloaded() const { return offload_ ? offload_->memory() : OffloadMemory{}; }

  T *encoded;            // (B*T, C) token + position embeddings: block 0's input
  std::vector<T *> out;  // L x (B*T, C): block l's output (residual stream)
  T *lnf;                // (B*T, C) ln_f output
  T *lnf_mean;           // (B*T)
  T *lnf_rstd;           // (B*T)
  T *logits;             // (B*T, V) logits; probabilities after the loss; then dlogits
  T *losses;             // (B*T) per-position cross-entropy
  // Scratch shared by all blocks.
  T *qkv;     // (B*T, 3C) attn.qkv output before the split by head; in backward dqkv
  T *yp;      // (B, NH, T, hs) attention output by head; in backward its gradient
  T *d_res;   // (B*T, C) gradient of the residual stream
  T *d_ln;    // (B*T, C) gradient of a LayerNorm output / of the attention output
  T *d_fch;   // (B*T, 4C) gradient of the MLP hidden layer
  T *d_att;   // (B, NH, T, T) gradient of the attention scores
  T *d_qkvp;  // (3, B, NH, T, hs) gradient of q, k, v by head

 private:
  struct CountOnly {};
  // Carves nothing: counted_ is what the other constructor allocates.
  Activations(const Gpt2Config &config, int max_batch, int max_seq, ActivationMode mode, CountOnly);
  // Hands out the fields from base (nullptr: counts only); returns the elements used.
  size_t carve(const Gpt2Config &config, T *base);
  // One block's fields, in elements (what an offload push moves).
  static size_t block_elements(const Gpt2Config &config, int max_batch, int max_seq);

  int max_batch_, max_seq_;
  ActivationMode mode_;
  std::vector<BlockActivations<T>> blocks_;
  Kokkos::View<T *, MemSpace> storage_;
  std::unique_ptr<BlockOffload> offload_;
  size_t counted_ = 0;
};

extern template class Activations<float>;
extern template class Activations<double>;

}  // namespace gpt2
