#include "activations.hpp"

#include <algorithm>
#include <array>

namespace gpt2 {

template <class T>
Activations<T>::Activations(const Gpt2Config &cfg, int max_batch, int max_seq, ActivationMode mode,
                            zrt_context_h context)
    : max_batch_(max_batch), max_seq_(max_seq), mode_(mode) {
  const size_t B = static_cast<size_t>(max_batch), Tn = static_cast<size_t>(max_seq);
  const size_t C = static_cast<size_t>(cfg.channels), NH = static_cast<size_t>(cfg.num_heads);
  const size_t V = static_cast<size_t>(cfg.vocab_size), L = static_cast<size_t>(cfg.num_layers);
  const size_t BT = B * Tn, att = B * NH * Tn * Tn;
  const size_t nblocks = mode == ActivationMode::keep      ? L
                         : mode == ActivationMode::offload ? std::min<size_t>(L, 2)
                                                           : 1;
  const bool backward = mode != ActivationMode::inference;

  // Two passes over the same list: the first counts, the second hands out pointers.
  T *base = nullptr;
  size_t used = 0;
  auto take = [&](size_t n) {
    T *p = base ? base + used : nullptr;
    used += n;
    return p;
  };
  auto carve = [&] {
    used = 0;
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
  };
  carve();
  storage_ = Kokkos::View<T *, MemSpace>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "activations"), used);
  base = storage_.data();
  carve();
  if (mode == ActivationMode::offload) {
    // Each block's fields are carved one after the other: one push moves them all.
    const size_t block_bytes =
        static_cast<size_t>(blocks_[0].fch_gelu + 4 * BT * C - blocks_[0].ln1) * sizeof(T);
    offload_ = std::make_unique<BlockOffload>(
        context, static_cast<int>(L), std::array<void *, 2>{blocks_[0].ln1, blocks_.back().ln1},
        block_bytes);
  }
}

template class Activations<float>;
template class Activations<double>;

}  // namespace gpt2
