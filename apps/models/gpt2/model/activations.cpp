#include "activations.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace gpt2 {

template <class T>
size_t Activations<T>::carve(const Gpt2Config &cfg, T *base) {
  const size_t B = static_cast<size_t>(max_batch_), Tn = static_cast<size_t>(max_seq_);
  const size_t C = static_cast<size_t>(cfg.channels), NH = static_cast<size_t>(cfg.num_heads);
  const size_t V = static_cast<size_t>(cfg.vocab_size), L = static_cast<size_t>(cfg.num_layers);
  const size_t BT = B * Tn, att = B * NH * Tn * Tn;
  const size_t nblocks = mode_ == ActivationMode::keep      ? L
                         : mode_ == ActivationMode::offload ? std::min<size_t>(L, 2)
                                                            : 1;
  const bool backward = mode_ != ActivationMode::inference;
  size_t used = 0;
  auto take = [&](size_t n) {
    T *p = base ? base + used : nullptr;
    used += n;
    return p;
  };
  encoded = take(BT * C);
  out.assign(L, nullptr);
  for (size_t l = 0; l < L; ++l)
    out[l] = take(BT * C);
  blocks_.assign(nblocks, {});
  for (BlockActivations<T> &b : blocks_) {
    b.ln1 = take(BT * C);
    b.ln1_mean = take(BT);
    b.ln1_rstd = take(BT);
    b.qkvp = take(3 * BT * C);
    b.att = take(att);
    b.atty = take(BT * C);
    b.res2 = take(BT * C);
    b.ln2 = take(BT * C);
    b.ln2_mean = take(BT);
    b.ln2_rstd = take(BT);
    b.fch = take(4 * BT * C);
    b.fch_gelu = take(4 * BT * C);
  }
  lnf = take(BT * C);
  lnf_mean = take(BT);
  lnf_rstd = take(BT);
  logits = take(BT * V);
  losses = take(BT);
  qkv = take(3 * BT * C);
  yp = take(BT * C);
  d_res = backward ? take(BT * C) : nullptr;
  d_ln = backward ? take(BT * C) : nullptr;
  d_fch = backward ? take(4 * BT * C) : nullptr;
  d_att = backward ? take(att) : nullptr;
  d_qkvp = backward ? take(3 * BT * C) : nullptr;
  return used;
}

template <class T>
size_t Activations<T>::block_elements(const Gpt2Config &cfg, int max_batch, int max_seq) {
  // Each block's fields are carved one after the other, ln1 first and fch_gelu last.
  const size_t BT = static_cast<size_t>(max_batch) * static_cast<size_t>(max_seq);
  const size_t C = static_cast<size_t>(cfg.channels), NH = static_cast<size_t>(cfg.num_heads);
  const size_t att = static_cast<size_t>(max_batch) * NH * static_cast<size_t>(max_seq) *
                     static_cast<size_t>(max_seq);
  return 15 * BT * C + 4 * BT + att;
}

template <class T>
Activations<T>::Activations(const Gpt2Config &cfg, int max_batch, int max_seq, ActivationMode mode,
                            zrt_context_h context)
    : max_batch_(max_batch), max_seq_(max_seq), mode_(mode) {
  // Two passes over the same list: the first counts, the second hands out pointers.
  const size_t used = carve(cfg, nullptr);
  storage_ = Kokkos::View<T *, MemSpace>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "activations"), used);
  carve(cfg, storage_.data());
  if (mode == ActivationMode::offload) {
    const size_t block_bytes = block_elements(cfg, max_batch, max_seq) * sizeof(T);
    if (blocks_[0].fch_gelu + 4 * static_cast<size_t>(max_batch) * static_cast<size_t>(max_seq) *
                                  static_cast<size_t>(cfg.channels) !=
        blocks_[0].ln1 + block_bytes / sizeof(T))
      throw std::logic_error("gpt2::Activations: block_elements() is not the carved block");
    offload_ = std::make_unique<BlockOffload>(
        context, cfg.num_layers, std::array<void *, 2>{blocks_[0].ln1, blocks_.back().ln1},
        block_bytes);
  }
}

template <class T>
Activations<T>::Activations(const Gpt2Config &cfg, int max_batch, int max_seq, ActivationMode mode,
                            CountOnly)
    : max_batch_(max_batch), max_seq_(max_seq), mode_(mode) {
  counted_ = carve(cfg, nullptr);
}

template <class T>
int64_t Activations<T>::planned_bytes(const Gpt2Config &cfg, int max_batch, int max_seq,
                                      ActivationMode mode) {
  const Activations<T> counted(cfg, max_batch, max_seq, mode, CountOnly{});
  return static_cast<int64_t>(counted.counted_ * sizeof(T));
}

template <class T>
int64_t Activations<T>::planned_offloaded_bytes(const Gpt2Config &cfg, int max_batch, int max_seq) {
  // Two blocks stay in the carved storage; the others are pushed (block_offload.hpp).
  return static_cast<int64_t>(block_elements(cfg, max_batch, max_seq) * sizeof(T)) *
         std::max(cfg.num_layers - 2, 0);
}

template class Activations<float>;
template class Activations<double>;

}  // namespace gpt2
