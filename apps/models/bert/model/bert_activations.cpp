#include "bert_activations.hpp"

#include <algorithm>
#include <utility>

namespace bert {

template <class T>
std::vector<std::pair<T **, int64_t>> BertActivations<T>::fields(const BertConfig &cfg) {
  const int64_t B = max_batch_, Tn = max_seq_, BT = B * Tn, H = cfg.hidden, I = cfg.intermediate;
  const int64_t A = cfg.num_heads, V = cfg.vocab_size;
  const int64_t P = max_masked_;
  const int64_t heads = std::max(P, B);
  std::vector<std::pair<T **, int64_t>> want;
  auto add = [&](T *&p, int64_t n) { want.emplace_back(&p, n); };
  add(emb_sum, BT * H);
  add(emb_mean, BT);
  add(emb_rstd, BT);
  add(emb_out, BT * H);
  for (LayerActivations<T> &a : layers_) {
    add(a.qkvp, 3 * BT * H);
    add(a.att, B * A * Tn * Tn);
    add(a.ctx, BT * H);
    add(a.res1, BT * H);
    add(a.aln_mean, BT);
    add(a.aln_rstd, BT);
    add(a.h1, BT * H);
    add(a.fch, BT * I);
    add(a.fch_gelu, BT * I);
    add(a.res2, BT * H);
    add(a.oln_mean, BT);
    add(a.oln_rstd, BT);
    add(a.out, BT * H);
  }
  add(pool_in, B * H);
  add(pool_pre, B * H);
  add(pooled, B * H);
  add(nsp_logits, B * 2);
  add(nsp_losses, B);
  add(mlm_in, P * H);
  add(mlm_t, P * H);
  add(mlm_g, P * H);
  add(mlm_ln, P * H);
  add(mlm_mean, P);
  add(mlm_rstd, P);
  add(mlm_logits, P * V);
  add(mlm_losses, P);
  add(qkv, 3 * BT * H);
  add(yp, BT * H);
  add(d_x, BT * H);
  add(d_y, BT * H);
  add(d_ctx, BT * H);
  add(d_fch, BT * I);
  add(d_att, B * A * Tn * Tn);
  add(d_qkvp, 3 * BT * H);
  add(d_head_a, heads * H);
  add(d_head_b, heads * H);
  return want;
}

template <class T>
BertActivations<T>::BertActivations(const BertConfig &cfg, int max_batch, int max_seq,
                                    int max_masked)
    : max_batch_(max_batch),
      max_seq_(max_seq),
      max_masked_(max_masked < 0 ? max_batch * max_seq : max_masked),
      layers_(static_cast<size_t>(cfg.num_layers)) {
  // Two passes: count, then carve (the pointers only once storage exists).
  const std::vector<std::pair<T **, int64_t>> want = fields(cfg);
  int64_t total = 0;
  for (const auto &w : want)
    total += w.second;
  storage_ = Kokkos::View<T *, MemSpace>("bert_activations", static_cast<size_t>(total));
  T *next = storage_.data();
  for (const auto &w : want) {
    *w.first = next;
    next += w.second;
  }
}

template <class T>
BertActivations<T>::BertActivations(const BertConfig &cfg, int max_batch, int max_seq,
                                    int max_masked, CountOnly)
    : max_batch_(max_batch),
      max_seq_(max_seq),
      max_masked_(max_masked < 0 ? max_batch * max_seq : max_masked),
      layers_(static_cast<size_t>(cfg.num_layers)) {
  for (const auto &w : fields(cfg))
    counted_ += w.second;
}

template <class T>
int64_t BertActivations<T>::planned_bytes(const BertConfig &cfg, int max_batch, int max_seq,
                                          int max_masked) {
  const BertActivations<T> counted(cfg, max_batch, max_seq, max_masked, CountOnly{});
  return counted.counted_ * static_cast<int64_t>(sizeof(T));
}

template class BertActivations<float>;
template class BertActivations<double>;

}  // namespace bert
