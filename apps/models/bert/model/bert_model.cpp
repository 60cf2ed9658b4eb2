#include "bert_model.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include <zerort/nn/attention.hpp>
#include <zerort/nn/crossentropy.hpp>
#include <zerort/nn/embedding.hpp>
#include <zerort/nn/encoder.hpp>
#include <zerort/nn/gelu.hpp>
#include <zerort/nn/layernorm.hpp>
#include <zerort/nn/matmul.hpp>
#include <zerort/nn/normal.hpp>
#include <zerort/nn/residual.hpp>
#include <zerort/nn/rows.hpp>
#include <zerort/nn/store_views.hpp>
#include <zerort/nn/tanh.hpp>

namespace bert {
using namespace zrt::nn;  // the layers

template <class T>
BertModel<T>::BertModel(const BertConfig &config, ParameterStore<T> &store)
    : config_(config), store_(store), ids_(parameter_ids(config)) {
  config_.validate();
  check_layout(store_, parameter_layout(config_), config_.name);
}

template <class T>
void BertModel<T>::init_parameters(uint64_t seed) {
  Normal normal(seed);
  const std::vector<TensorSpec> &tensors = store_.tensors();
  std::vector<T> host;
  for (size_t id = 0; id < tensors.size(); ++id) {
    const TensorSpec &t = tensors[id];
    host.assign(static_cast<size_t>(t.numel()), T(0));
    if (t.name.ends_with("LayerNorm.weight")) {
      std::fill(host.begin(), host.end(), T(1));
    } else if (t.shape.size() == 2) {
      for (T &v : host)
        v = static_cast<T>(0.02 * normal());
      // nn.Embedding(padding_idx=0): the [PAD] row starts at 0.
      if (static_cast<int>(id) == ids_.word)
        std::fill(host.begin(), host.begin() + t.shape[1], T(0));
    }
    store_.set(static_cast<int>(id), host.data());
  }
}

template <class T>
void BertModel<T>::check_shape(const BertActivations<T> &acts, const BertBatch &batch) const {
  if (batch.B <= 0 || batch.T <= 0 || batch.B > acts.max_batch() || batch.T > acts.max_seq())
    throw std::invalid_argument(
        fmt::format("batch {} x {} tokens does not fit activations for {} x {}", batch.B, batch.T,
                    acts.max_batch(), acts.max_seq()));
  if (batch.T > config_.max_positions)
    throw std::invalid_argument(
        fmt::format("sequence of {} tokens exceeds the model's {} positions "
                    "(max_position_embeddings)",
                    batch.T, config_.max_positions));
  if (batch.P <= 0 || batch.P > acts.max_masked())
    throw std::invalid_argument(
        fmt::format("{} masked positions: expected 1 to {}", batch.P, acts.max_masked()));
}

template <class T>
CVec<T> BertModel<T>::vec(int id) {
  return tensor_vec(store_, id);
}

template <class T>
CMat<T> BertModel<T>::mat(int id) {
  return tensor_mat(store_, id);
}

template <class T>
void BertModel<T>::gather(const std::vector<int> &ids) {
  for (int id : ids)
    store_.gather(id);
}

template <class T>
void BertModel<T>::release(const std::vector<int> &ids) {
  for (int id : ids)
    store_.release(id);
}

template <class T>
void BertModel<T>::layer_forward(BertActivations<T> &acts, int l, const T *input,
                                 const BertBatch &batch) {
  const LayerIds &p = ids_.layers[static_cast<size_t>(l)];
  LayerActivations<T> &a = acts.layer(l);
  const int64_t BT = int64_t{batch.B} * batch.T, H = config_.hidden, I = config_.intermediate;
  const T eps = static_cast<T>(config_.layer_norm_eps);
  AttentionShape shape{batch.B, batch.T, config_.num_heads, config_.head_size()};
  shape.mask = AttentionMask::padding;
  shape.lengths = batch.lengths;
  shape.layout = QkvLayout::planar;
  auto x = as_mat<const T>(input, BT, H);

  // Self-attention: the three projections write the planar (3 BT, H) blocks.
  matmul_forward<T>(as_mat(acts.qkv, BT, H), x, mat(p.q_w), vec(p.q_b));
  matmul_forward<T>(as_mat(acts.qkv + BT * H, BT, H), x, mat(p.k_w), vec(p.k_b));
  matmul_forward<T>(as_mat(acts.qkv + 2 * BT * H, BT, H), x, mat(p.v_w), vec(p.v_b));
  attention_forward<T>(as_mat(a.ctx, BT, H), Vec<T>(a.qkvp, 3 * BT * H),
                       Vec<T>(a.att, int64_t{batch.B} * shape.NH * batch.T * batch.T),
                       Vec<T>(acts.yp, BT * H), as_mat<const T>(acts.qkv, 3 * BT, H), shape);
  // x1 = LN(x + attention.output.dense(ctx))
  matmul_forward<T>(as_mat(a.res1, BT, H), as_mat<const T>(a.ctx, BT, H), mat(p.ao_w), vec(p.ao_b));
  residual_forward<T>(Vec<T>(a.res1, BT * H), CVec<T>(input, BT * H), CVec<T>(a.res1, BT * H));
  layernorm_forward<T>(as_mat(a.h1, BT, H), Vec<T>(a.aln_mean, BT), Vec<T>(a.aln_rstd, BT),
                       as_mat<const T>(a.res1, BT, H), vec(p.aln_w), vec(p.aln_b), eps);
  // out = LN(x1 + output.dense(gelu(intermediate.dense(x1))))
  matmul_forward<T>(as_mat(a.fch, BT, I), as_mat<const T>(a.h1, BT, H), mat(p.i_w), vec(p.i_b));
  gelu_forward<T>(Vec<T>(a.fch_gelu, BT * I), CVec<T>(a.fch, BT * I), GeluForm::erf);
  matmul_forward<T>(as_mat(a.res2, BT, H), as_mat<const T>(a.fch_gelu, BT, I), mat(p.o_w),
                    vec(p.o_b));
  residual_forward<T>(Vec<T>(a.res2, BT * H), CVec<T>(a.h1, BT * H), CVec<T>(a.res2, BT * H));
  layernorm_forward<T>(as_mat(a.out, BT, H), Vec<T>(a.oln_mean, BT), Vec<T>(a.oln_rstd, BT),
                       as_mat<const T>(a.res2, BT, H), vec(p.oln_w), vec(p.oln_b), eps);
}

template <class T>
BertLosses BertModel<T>::forward(BertActivations<T> &acts, const BertBatch &batch) {
  check_shape(acts, batch);
  const int B = batch.B, Tn = batch.T, P = batch.P;
  const int64_t BT = int64_t{B} * Tn, H = config_.hidden, V = config_.vocab_size;
  const T eps = static_cast<T>(config_.layer_norm_eps);
  BertLosses out;

  // Embeddings: LN(word[ids] + position[t] + token_type[segment]).
  const std::vector<int> emb = {ids_.word, ids_.position, ids_.token_type, ids_.emb_ln_w,
                                ids_.emb_ln_b};
  gather(emb);
  encoder_forward<T>(as_mat(acts.emb_sum, BT, H), batch.input_ids, mat(ids_.word),
                     mat(ids_.position), B, Tn);
  embedding_forward<T>(as_mat(acts.emb_sum, BT, H), batch.segment_ids, mat(ids_.token_type), T(1));
  layernorm_forward<T>(as_mat(acts.emb_out, BT, H), Vec<T>(acts.emb_mean, BT),
                       Vec<T>(acts.emb_rstd, BT), as_mat<const T>(acts.emb_sum, BT, H),
                       vec(ids_.emb_ln_w), vec(ids_.emb_ln_b), eps);
  release(emb);

  const T *x = acts.emb_out;
  for (int l = 0; l < config_.num_layers; ++l) {
    const std::vector<int> layer = ids_.layers[static_cast<size_t>(l)].all();
    gather(layer);
    layer_forward(acts, l, x, batch);
    release(layer);
    x = acts.layer(l).out;
  }
  auto hidden = as_mat<const T>(x, BT, H);

  // NSP: the pooled [CLS] output and its 2-way classifier.
  const std::vector<int> nsp = {ids_.pooler_w, ids_.pooler_b, ids_.nsp_w, ids_.nsp_b};
  gather(nsp);
  gather_rows<T>(as_mat(acts.pool_in, B, H), hidden, batch.cls_rows);
  matmul_forward<T>(as_mat(acts.pool_pre, B, H), as_mat<const T>(acts.pool_in, B, H),
                    mat(ids_.pooler_w), vec(ids_.pooler_b));
  tanh_forward<T>(Vec<T>(acts.pooled, B * H), CVec<T>(acts.pool_pre, B * H));
  matmul_forward<T>(as_mat(acts.nsp_logits, B, 2), as_mat<const T>(acts.pooled, B, H),
                    mat(ids_.nsp_w), vec(ids_.nsp_b));
  release(nsp);
  out.nsp = crossentropy_forward<T>(as_mat(acts.nsp_logits, B, 2), Vec<T>(acts.nsp_losses, B),
                                    batch.nsp_labels);
  out.nsp_correct =
      crossentropy_correct<T>(as_mat<const T>(acts.nsp_logits, B, 2), batch.nsp_labels);
  out.nsp_count = B;

  // MLM: transform and decoder at the masked positions only.
  const std::vector<int> mlm = {ids_.transform_w,    ids_.transform_b, ids_.transform_ln_w,
                                ids_.transform_ln_b, ids_.word,        ids_.decoder_b};
  gather(mlm);
  gather_rows<T>(as_mat(acts.mlm_in, P, H), hidden, batch.mlm_rows);
  matmul_forward<T>(as_mat(acts.mlm_t, P, H), as_mat<const T>(acts.mlm_in, P, H),
                    mat(ids_.transform_w), vec(ids_.transform_b));
  gelu_forward<T>(Vec<T>(acts.mlm_g, P * H), CVec<T>(acts.mlm_t, P * H), GeluForm::erf);
  layernorm_forward<T>(as_mat(acts.mlm_ln, P, H), Vec<T>(acts.mlm_mean, P),
                       Vec<T>(acts.mlm_rstd, P), as_mat<const T>(acts.mlm_g, P, H),
                       vec(ids_.transform_ln_w), vec(ids_.transform_ln_b), eps);
  matmul_forward<T>(as_mat(acts.mlm_logits, P, V), as_mat<const T>(acts.mlm_ln, P, H),
                    mat(ids_.word), vec(ids_.decoder_b));
  release(mlm);
  out.mlm = crossentropy_forward<T>(as_mat(acts.mlm_logits, P, V), Vec<T>(acts.mlm_losses, P),
                                    batch.mlm_labels);
  out.mlm_correct =
      crossentropy_correct<T>(as_mat<const T>(acts.mlm_logits, P, V), batch.mlm_labels);
  out.mlm_count = P;
  return out;
}

template <class T>
void BertModel<T>::layer_backward(BertActivations<T> &acts, int l, const T *input,
                                  const BertBatch &batch) {
  const LayerIds &p = ids_.layers[static_cast<size_t>(l)];
  LayerActivations<T> &a = acts.layer(l);
  const int64_t BT = int64_t{batch.B} * batch.T, H = config_.hidden, I = config_.intermediate;
  AttentionShape shape{batch.B, batch.T, config_.num_heads, config_.head_size()};
  shape.mask = AttentionMask::padding;
  shape.lengths = batch.lengths;
  shape.layout = QkvLayout::planar;
  auto d_x = as_mat(acts.d_x, BT, H), d_y = as_mat(acts.d_y, BT, H);
  auto d_fch = as_mat(acts.d_fch, BT, I);
  auto ready = [&](int w, int b) {
    store_.grad_ready(b);  // reverse layout order: bias, then weight
    store_.grad_ready(w);
  };
  auto linear_backward = [&](Mat<T> dinp, int w, int b, CMat<T> dout, CMat<T> inp, T beta_dinp) {
    GradBuffer<T> gw = store_.grad(w), gb = store_.grad(b);
    const auto &shape_w = store_.tensors()[static_cast<size_t>(w)].shape;
    matmul_backward<T>(dinp, as_mat(gw.data, shape_w[0], shape_w[1]), Vec<T>(gb.data, shape_w[0]),
                       dout, inp, mat(w), beta_dinp, beta_of(gw));
    ready(w, b);
  };
  auto layernorm_back = [&](Mat<T> dinp, int w, int b, CMat<T> dout, const T *inp, const T *mean,
                            const T *rstd) {
    GradBuffer<T> gw = store_.grad(w), gb = store_.grad(b);
    layernorm_backward<T>(dinp, Vec<T>(gw.data, H), Vec<T>(gb.data, H), dout,
                          as_mat<const T>(inp, BT, H), vec(w), CVec<T>(mean, BT), CVec<T>(rstd, BT),
                          T(0), beta_of(gw));
    ready(w, b);
  };

  // out = LN(res2): d_y = d res2, which flows to h1 and into output.dense.
  layernorm_back(d_y, p.oln_w, p.oln_b, d_x, a.res2, a.oln_mean, a.oln_rstd);
  linear_backward(d_fch, p.o_w, p.o_b, d_y, as_mat<const T>(a.fch_gelu, BT, I), T(0));
  gelu_backward<T>(Vec<T>(acts.d_fch, BT * I), CVec<T>(a.fch, BT * I), CVec<T>(acts.d_fch, BT * I),
                   GeluForm::erf);
  linear_backward(d_y, p.i_w, p.i_b, d_fch, as_mat<const T>(a.h1, BT, H), T(1));  // d h1
  // h1 = LN(res1): d_x = d res1, which flows to the input and into the attention.
  layernorm_back(d_x, p.aln_w, p.aln_b, d_y, a.res1, a.aln_mean, a.aln_rstd);
  linear_backward(as_mat(acts.d_ctx, BT, H), p.ao_w, p.ao_b, d_x, as_mat<const T>(a.ctx, BT, H),
                  T(0));
  attention_backward<T>(as_mat(acts.qkv, 3 * BT, H), Vec<T>(acts.d_qkvp, 3 * BT * H),
                        Vec<T>(acts.d_att, int64_t{batch.B} * shape.NH * batch.T * batch.T),
                        Vec<T>(acts.yp, BT * H), as_mat<const T>(acts.d_ctx, BT, H),
                        CVec<T>(a.qkvp, 3 * BT * H),
                        CVec<T>(a.att, int64_t{batch.B} * shape.NH * batch.T * batch.T), shape);
  auto x = as_mat<const T>(input, BT, H);
  linear_backward(d_x, p.v_w, p.v_b, as_mat<const T>(acts.qkv + 2 * BT * H, BT, H), x, T(1));
  linear_backward(d_x, p.k_w, p.k_b, as_mat<const T>(acts.qkv + BT * H, BT, H), x, T(1));
  linear_backward(d_x, p.q_w, p.q_b, as_mat<const T>(acts.qkv, BT, H), x, T(1));
}

template <class T>
void BertModel<T>::backward(BertActivations<T> &acts, const BertBatch &batch, T dmlm, T dnsp) {
  check_shape(acts, batch);
  const int B = batch.B, Tn = batch.T, P = batch.P, L = config_.num_layers;
  const int64_t BT = int64_t{B} * Tn, H = config_.hidden, V = config_.vocab_size;
  auto ready = [&](int w, int b) {
    store_.grad_ready(b);
    store_.grad_ready(w);
  };

  // MLM head. The word embeddings' gradient gets its first part from the decoder here and
  // the rest from the embedding at the very end, so its buffer stays open throughout.
  crossentropy_backward<T>(as_mat(acts.mlm_logits, P, V), batch.mlm_labels, dmlm);
  const std::vector<int> mlm = {ids_.word, ids_.transform_w, ids_.transform_ln_w};
  gather(mlm);
  GradBuffer<T> g_word = store_.grad(ids_.word), g_db = store_.grad(ids_.decoder_b);
  auto d_a = as_mat(acts.d_head_a, P, H), d_b = as_mat(acts.d_head_b, P, H);
  matmul_backward<T>(d_a, as_mat(g_word.data, V, H), Vec<T>(g_db.data, V),
                     as_mat<const T>(acts.mlm_logits, P, V), as_mat<const T>(acts.mlm_ln, P, H),
                     mat(ids_.word), T(0), beta_of(g_word));
  store_.grad_ready(ids_.decoder_b);
  GradBuffer<T> g_tlw = store_.grad(ids_.transform_ln_w), g_tlb = store_.grad(ids_.transform_ln_b);
  layernorm_backward<T>(d_b, Vec<T>(g_tlw.data, H), Vec<T>(g_tlb.data, H), d_a,
                        as_mat<const T>(acts.mlm_g, P, H), vec(ids_.transform_ln_w),
                        CVec<T>(acts.mlm_mean, P), CVec<T>(acts.mlm_rstd, P), T(0), beta_of(g_tlw));
  ready(ids_.transform_ln_w, ids_.transform_ln_b);
  gelu_backward<T>(Vec<T>(acts.d_head_b, P * H), CVec<T>(acts.mlm_t, P * H),
                   CVec<T>(acts.d_head_b, P * H), GeluForm::erf);
  GradBuffer<T> g_tw = store_.grad(ids_.transform_w), g_tb = store_.grad(ids_.transform_b);
  matmul_backward<T>(d_a, as_mat(g_tw.data, H, H), Vec<T>(g_tb.data, H), d_b,
                     as_mat<const T>(acts.mlm_in, P, H), mat(ids_.transform_w), T(0),
                     beta_of(g_tw));
  ready(ids_.transform_w, ids_.transform_b);
  release(mlm);
  // d_a (P, H) now holds the gradient at the masked positions: into the hidden state's.
  auto d_hidden = as_mat(acts.d_x, BT, H);
  Kokkos::deep_copy(Kokkos::View<T *, MemSpace, Unmanaged>(acts.d_x, BT * H), T(0));
  scatter_add_rows<T>(d_hidden, as_mat<const T>(acts.d_head_a, P, H), batch.mlm_rows);

  // NSP head.
  crossentropy_backward<T>(as_mat(acts.nsp_logits, B, 2), batch.nsp_labels, dnsp);
  const std::vector<int> nsp = {ids_.pooler_w, ids_.nsp_w};
  gather(nsp);
  auto p_a = as_mat(acts.d_head_a, B, H), p_b = as_mat(acts.d_head_b, B, H);
  GradBuffer<T> g_sw = store_.grad(ids_.nsp_w), g_sb = store_.grad(ids_.nsp_b);
  matmul_backward<T>(p_a, as_mat(g_sw.data, 2, H), Vec<T>(g_sb.data, 2),
                     as_mat<const T>(acts.nsp_logits, B, 2), as_mat<const T>(acts.pooled, B, H),
                     mat(ids_.nsp_w), T(0), beta_of(g_sw));
  ready(ids_.nsp_w, ids_.nsp_b);
  tanh_backward<T>(Vec<T>(acts.d_head_a, B * H), CVec<T>(acts.pooled, B * H),
                   CVec<T>(acts.d_head_a, B * H));
  GradBuffer<T> g_pw = store_.grad(ids_.pooler_w), g_pb = store_.grad(ids_.pooler_b);
  matmul_backward<T>(p_b, as_mat(g_pw.data, H, H), Vec<T>(g_pb.data, H), p_a,
                     as_mat<const T>(acts.pool_in, B, H), mat(ids_.pooler_w), T(0), beta_of(g_pw));
  ready(ids_.pooler_w, ids_.pooler_b);
  release(nsp);
  scatter_add_rows<T>(d_hidden, as_mat<const T>(acts.d_head_b, B, H), batch.cls_rows);

  for (int l = L - 1; l >= 0; --l) {
    const T *input = l == 0 ? acts.emb_out : acts.layer(l - 1).out;
    const std::vector<int> layer = ids_.layers[static_cast<size_t>(l)].all();
    gather(layer);
    layer_backward(acts, l, input, batch);
    release(layer);
  }

  // Embeddings: the LayerNorm, then the three tables.
  store_.gather(ids_.emb_ln_w);
  GradBuffer<T> g_lw = store_.grad(ids_.emb_ln_w), g_lb = store_.grad(ids_.emb_ln_b);
  auto d_emb = as_mat(acts.d_y, BT, H);
  layernorm_backward<T>(d_emb, Vec<T>(g_lw.data, H), Vec<T>(g_lb.data, H),
                        as_mat<const T>(acts.d_x, BT, H), as_mat<const T>(acts.emb_sum, BT, H),
                        vec(ids_.emb_ln_w), CVec<T>(acts.emb_mean, BT), CVec<T>(acts.emb_rstd, BT),
                        T(0), beta_of(g_lw));
  store_.release(ids_.emb_ln_w);
  ready(ids_.emb_ln_w, ids_.emb_ln_b);
  GradBuffer<T> g_type = store_.grad(ids_.token_type);
  embedding_backward<T>(as_mat(g_type.data, config_.type_vocab_size, H),
                        as_mat<const T>(acts.d_y, BT, H), batch.segment_ids, beta_of(g_type));
  store_.grad_ready(ids_.token_type);
  GradBuffer<T> g_pos = store_.grad(ids_.position);
  encoder_backward<T>(as_mat(g_word.data, V, H), as_mat(g_pos.data, config_.max_positions, H),
                      as_mat<const T>(acts.d_y, BT, H), batch.input_ids, B, Tn, beta_of(g_pos));
  store_.grad_ready(ids_.position);
  store_.grad_ready(ids_.word);
}

template class BertModel<float>;
template class BertModel<double>;

}  // namespace bert
