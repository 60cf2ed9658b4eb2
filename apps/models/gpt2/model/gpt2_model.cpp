#include "gpt2_model.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include <zerort/nn/attention.hpp>
#include <zerort/nn/crossentropy.hpp>
#include <zerort/nn/encoder.hpp>
#include <zerort/nn/gelu.hpp>
#include <zerort/nn/layernorm.hpp>
#include <zerort/nn/matmul.hpp>
#include <zerort/nn/normal.hpp>
#include <zerort/nn/residual.hpp>
#include <zerort/nn/store_views.hpp>

namespace gpt2 {
using namespace zrt::nn;  // the layers

template <class T>
Gpt2Model<T>::Gpt2Model(const Gpt2Config &config, ParameterStore<T> &store)
    : config_(config), store_(store), ids_(parameter_ids(config)) {
  config_.validate();
  check_layout(store_, parameter_layout(config_), config_.name);
}

template <class T>
void Gpt2Model<T>::init_parameters(uint64_t seed) {
  Normal normal(seed);
  const double std_residual = 0.02 / std::sqrt(2.0 * config_.num_layers);
  const std::vector<TensorSpec> &tensors = store_.tensors();
  std::vector<T> host;
  for (size_t id = 0; id < tensors.size(); ++id) {
    const TensorSpec &t = tensors[id];
    host.assign(static_cast<size_t>(t.numel()), T(0));
    if (t.name.ends_with("ln_1.weight") || t.name.ends_with("ln_2.weight") ||
        t.name == "ln_f.weight") {
      std::fill(host.begin(), host.end(), T(1));
    } else if (t.shape.size() == 2) {
      // GPT-2 scales the projections into the residual stream by 1/sqrt(2L), since L
      // blocks each add two of them.
      const double std = t.name.ends_with("attn.proj.weight") || t.name.ends_with("mlp.proj.weight")
                             ? std_residual
                             : 0.02;
      for (T &v : host)
        v = static_cast<T>(std * normal());
    }
    store_.set(static_cast<int>(id), host.data());
  }
}

template <class T>
void Gpt2Model<T>::check_shape(const Activations<T> &acts, int B, int Tn) const {
  if (B <= 0 || Tn <= 0 || B > acts.max_batch() || Tn > acts.max_seq())
    throw std::invalid_argument(
        fmt::format("batch {} x {} tokens does not fit activations for {} x {}", B, Tn,
                    acts.max_batch(), acts.max_seq()));
  if (Tn > config_.max_seq_len)
    throw std::invalid_argument(
        fmt::format("sequence of {} tokens exceeds the model's context "
                    "of {} (n_positions)",
                    Tn, config_.max_seq_len));
}

template <class T>
CVec<T> Gpt2Model<T>::vec(int id) {
  return tensor_vec(store_, id);
}

template <class T>
CMat<T> Gpt2Model<T>::mat(int id) {
  return tensor_mat(store_, id);
}

template <class T>
void Gpt2Model<T>::gather_block(int l) {
  for (int id : ids_.layers[static_cast<size_t>(l)].all())
    store_.gather(id);
}

template <class T>
void Gpt2Model<T>::release_block(int l) {
  for (int id : ids_.layers[static_cast<size_t>(l)].all())
    store_.release(id);
}

template <class T>
void Gpt2Model<T>::block_forward(Activations<T> &acts, int l, const T *input, int B, int Tn,
                                 bool write_output) {
  const LayerParams &p = ids_.layers[static_cast<size_t>(l)];
  BlockActivations<T> &a = acts.block(l);
  const int64_t BT = int64_t{B} * Tn, C = config_.channels;
  const AttentionShape shape{B, Tn, config_.num_heads, config_.head_size()};
  auto x = as_mat<const T>(input, BT, C);

  // Attention half: res2 = x + attn.proj(attention(attn.qkv(ln_1(x))))
  layernorm_forward<T>(as_mat(a.ln1, BT, C), Vec<T>(a.ln1_mean, BT), Vec<T>(a.ln1_rstd, BT), x,
                       vec(p.ln1_w), vec(p.ln1_b));
  matmul_forward<T>(as_mat(acts.qkv, BT, 3 * C), as_mat<const T>(a.ln1, BT, C), mat(p.qkv_w),
                    vec(p.qkv_b));
  attention_forward<T>(as_mat(a.atty, BT, C), Vec<T>(a.qkvp, 3 * BT * C),
                       Vec<T>(a.att, int64_t{B} * shape.NH * Tn * Tn), Vec<T>(acts.yp, BT * C),
                       as_mat<const T>(acts.qkv, BT, 3 * C), shape);
  // attn.proj's output goes to ln2 for now: it is overwritten by ln_2 right after.
  matmul_forward<T>(as_mat(a.ln2, BT, C), as_mat<const T>(a.atty, BT, C), mat(p.proj_w),
                    vec(p.proj_b));
  residual_forward<T>(Vec<T>(a.res2, BT * C), CVec<T>(input, BT * C), CVec<T>(a.ln2, BT * C));

  // MLP half: out = res2 + mlp.proj(gelu(mlp.fc(ln_2(res2))))
  layernorm_forward<T>(as_mat(a.ln2, BT, C), Vec<T>(a.ln2_mean, BT), Vec<T>(a.ln2_rstd, BT),
                       as_mat<const T>(a.res2, BT, C), vec(p.ln2_w), vec(p.ln2_b));
  matmul_forward<T>(as_mat(a.fch, BT, 4 * C), as_mat<const T>(a.ln2, BT, C), mat(p.fc_w),
                    vec(p.fc_b));
  gelu_forward<T>(Vec<T>(a.fch_gelu, BT * 4 * C), CVec<T>(a.fch, BT * 4 * C));
  if (!write_output) return;
  T *out = acts.out[static_cast<size_t>(l)];
  matmul_forward<T>(as_mat(out, BT, C), as_mat<const T>(a.fch_gelu, BT, 4 * C), mat(p.fcproj_w),
                    vec(p.fcproj_b));
  residual_forward<T>(Vec<T>(out, BT * C), CVec<T>(a.res2, BT * C), CVec<T>(out, BT * C));
}

template <class T>
T Gpt2Model<T>::forward(Activations<T> &acts, Tokens tokens, Tokens targets, int B, int Tn) {
  check_shape(acts, B, Tn);
  const int64_t BT = int64_t{B} * Tn, C = config_.channels, V = config_.vocab_size;

  store_.gather(ids_.wte);
  store_.gather(ids_.wpe);
  encoder_forward<T>(as_mat(acts.encoded, BT, C), tokens, mat(ids_.wte), mat(ids_.wpe), B, Tn);
  store_.release(ids_.wpe);
  store_.release(ids_.wte);

  BlockOffload *offload = acts.offload();
  if (offload) offload->begin_forward();
  const T *x = acts.encoded;
  for (int l = 0; l < config_.num_layers; ++l) {
    if (offload) offload->before_block_forward(l);
    gather_block(l);
    block_forward(acts, l, x, B, Tn, true);
    release_block(l);
    if (offload) offload->after_block_forward(l);
    x = acts.out[static_cast<size_t>(l)];
  }

  store_.gather(ids_.lnf_w);
  store_.gather(ids_.lnf_b);
  layernorm_forward<T>(as_mat(acts.lnf, BT, C), Vec<T>(acts.lnf_mean, BT),
                       Vec<T>(acts.lnf_rstd, BT), as_mat<const T>(x, BT, C), vec(ids_.lnf_w),
                       vec(ids_.lnf_b));
  store_.release(ids_.lnf_b);
  store_.release(ids_.lnf_w);
  // LM head, tied to the token embedding: logits = ln_f(x) . wte^T
  store_.gather(ids_.wte);
  matmul_forward<T>(as_mat(acts.logits, BT, V), as_mat<const T>(acts.lnf, BT, C), mat(ids_.wte),
                    CVec<T>());
  store_.release(ids_.wte);

  if (targets.extent(0) == 0) return T(0);
  return crossentropy_forward<T>(as_mat(acts.logits, BT, V), Vec<T>(acts.losses, BT), targets);
}

template <class T>
void Gpt2Model<T>::block_backward(Activations<T> &acts, int l, const T *input, int B, int Tn) {
  const LayerParams &p = ids_.layers[static_cast<size_t>(l)];
  BlockActivations<T> &a = acts.block(l);
  const int64_t BT = int64_t{B} * Tn, C = config_.channels;
  const AttentionShape shape{B, Tn, config_.num_heads, config_.head_size()};
  auto d_res = as_mat(acts.d_res, BT, C);
  auto d_ln = as_mat(acts.d_ln, BT, C);
  auto d_fch = as_mat(acts.d_fch, BT, 4 * C);
  auto grads = [&](int w, int b) { return std::make_pair(store_.grad(w), store_.grad(b)); };
  auto ready = [&](int w, int b) {
    store_.grad_ready(b);  // reverse layout order: bias, then weight
    store_.grad_ready(w);
  };

  // MLP half. d_res is the gradient of out = res2 + mlp.proj(...): it flows unchanged to
  // res2 and into mlp.proj.
  auto [gpw, gpb] = grads(p.fcproj_w, p.fcproj_b);
  matmul_backward<T>(d_fch, as_mat(gpw.data, C, 4 * C), Vec<T>(gpb.data, C), d_res,
                     as_mat<const T>(a.fch_gelu, BT, 4 * C), mat(p.fcproj_w), T(0), beta_of(gpw));
  ready(p.fcproj_w, p.fcproj_b);
  gelu_backward<T>(Vec<T>(acts.d_fch, BT * 4 * C), CVec<T>(a.fch, BT * 4 * C),
                   CVec<T>(acts.d_fch, BT * 4 * C));
  auto [gfw, gfb] = grads(p.fc_w, p.fc_b);
  matmul_backward<T>(d_ln, as_mat(gfw.data, 4 * C, C), Vec<T>(gfb.data, 4 * C), d_fch,
                     as_mat<const T>(a.ln2, BT, C), mat(p.fc_w), T(0), beta_of(gfw));
  ready(p.fc_w, p.fc_b);
  auto [g2w, g2b] = grads(p.ln2_w, p.ln2_b);
  layernorm_backward<T>(d_res, Vec<T>(g2w.data, C), Vec<T>(g2b.data, C), d_ln,
                        as_mat<const T>(a.res2, BT, C), vec(p.ln2_w), CVec<T>(a.ln2_mean, BT),
                        CVec<T>(a.ln2_rstd, BT), T(1), beta_of(g2w));
  ready(p.ln2_w, p.ln2_b);

  // Attention half. d_res is now the gradient of res2 = x + attn.proj(...).
  auto [gaw, gab] = grads(p.proj_w, p.proj_b);
  matmul_backward<T>(d_ln, as_mat(gaw.data, C, C), Vec<T>(gab.data, C), d_res,
                     as_mat<const T>(a.atty, BT, C), mat(p.proj_w), T(0), beta_of(gaw));
  ready(p.proj_w, p.proj_b);
  attention_backward<T>(as_mat(acts.qkv, BT, 3 * C), Vec<T>(acts.d_qkvp, 3 * BT * C),
                        Vec<T>(acts.d_att, int64_t{B} * shape.NH * Tn * Tn),
                        Vec<T>(acts.yp, BT * C), d_ln, CVec<T>(a.qkvp, 3 * BT * C),
                        CVec<T>(a.att, int64_t{B} * shape.NH * Tn * Tn), shape);
  auto [gqw, gqb] = grads(p.qkv_w, p.qkv_b);
  matmul_backward<T>(d_ln, as_mat(gqw.data, 3 * C, C), Vec<T>(gqb.data, 3 * C),
                     as_mat<const T>(acts.qkv, BT, 3 * C), as_mat<const T>(a.ln1, BT, C),
                     mat(p.qkv_w), T(0), beta_of(gqw));
  ready(p.qkv_w, p.qkv_b);
  auto [g1w, g1b] = grads(p.ln1_w, p.ln1_b);
  layernorm_backward<T>(d_res, Vec<T>(g1w.data, C), Vec<T>(g1b.data, C), d_ln,
                        as_mat<const T>(input, BT, C), vec(p.ln1_w), CVec<T>(a.ln1_mean, BT),
                        CVec<T>(a.ln1_rstd, BT), T(1), beta_of(g1w));
  ready(p.ln1_w, p.ln1_b);
}

template <class T>
void Gpt2Model<T>::backward(Activations<T> &acts, Tokens tokens, Tokens targets, int B, int Tn,
                            T dloss) {
  check_shape(acts, B, Tn);
  if (acts.mode() == ActivationMode::inference)
    throw std::invalid_argument("backward needs activations made for training, not inference");
  const int64_t BT = int64_t{B} * Tn, C = config_.channels, V = config_.vocab_size;
  const int L = config_.num_layers;

  // Loss: the mean over BT positions, so each position's loss has weight dloss / BT.
  crossentropy_backward<T>(as_mat(acts.logits, BT, V), targets, dloss / T(BT));

  // LM head. wte's gradient gets its first part here and the rest from the embedding at
  // the very end, so its buffer stays open through the whole backward.
  store_.gather(ids_.wte);
  GradBuffer<T> g_wte = store_.grad(ids_.wte);
  matmul_backward<T>(as_mat(acts.d_ln, BT, C), as_mat(g_wte.data, V, C), Vec<T>(),
                     as_mat<const T>(acts.logits, BT, V), as_mat<const T>(acts.lnf, BT, C),
                     mat(ids_.wte), T(0), beta_of(g_wte));
  store_.release(ids_.wte);

  // ln_f: the residual stream's gradient starts here (overwritten, beta 0).
  store_.gather(ids_.lnf_w);
  store_.gather(ids_.lnf_b);
  GradBuffer<T> g_lnfw = store_.grad(ids_.lnf_w), g_lnfb = store_.grad(ids_.lnf_b);
  layernorm_backward<T>(as_mat(acts.d_res, BT, C), Vec<T>(g_lnfw.data, C), Vec<T>(g_lnfb.data, C),
                        as_mat<const T>(acts.d_ln, BT, C),
                        as_mat<const T>(acts.out[static_cast<size_t>(L - 1)], BT, C),
                        vec(ids_.lnf_w), CVec<T>(acts.lnf_mean, BT), CVec<T>(acts.lnf_rstd, BT),
                        T(0), beta_of(g_lnfw));
  store_.release(ids_.lnf_b);
  store_.release(ids_.lnf_w);
  store_.grad_ready(ids_.lnf_b);
  store_.grad_ready(ids_.lnf_w);

  for (int l = L - 1; l >= 0; --l) {
    const T *input = l == 0 ? acts.encoded : acts.out[static_cast<size_t>(l - 1)];
    gather_block(l);
    if (acts.mode() == ActivationMode::recompute) block_forward(acts, l, input, B, Tn, false);
    if (acts.offload()) acts.offload()->before_block_backward(l);
    block_backward(acts, l, input, B, Tn);
    release_block(l);
  }

  // Embeddings: no parameter values needed, only their gradients.
  GradBuffer<T> g_wpe = store_.grad(ids_.wpe);
  encoder_backward<T>(as_mat(g_wte.data, V, C), as_mat(g_wpe.data, config_.max_seq_len, C),
                      as_mat<const T>(acts.d_res, BT, C), tokens, B, Tn, beta_of(g_wpe));
  store_.grad_ready(ids_.wpe);
  store_.grad_ready(ids_.wte);
}

template class Gpt2Model<float>;
template class Gpt2Model<double>;

}  // namespace gpt2
