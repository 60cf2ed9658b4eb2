// GPT-2's float arithmetic against its own double: d2 trained in float and, from the same
// weights, in double (the same code, Gpt2Model<double>), with AdamW in each precision, on
// Moby Dick's first batches. The float losses must stay within float rounding of the
// double ones: 2e-7 relative over 10 steps (lr 6e-4, no warmup). What rounding leaves is
// mostly in the long sums (the softmax's over 50,257 logits, LayerNorm's over 768 channels,
// the loss mean), which are summed in blocks (nn/block_sum.hpp): measured here, summed one
// after another they drifted 5.0e-7, in blocks 8.3e-8, and 4.5e-8 once attention's
// softmax (now with fast_exp, as the loss's) and LayerNorm's backward summed in blocks too
// (2026-12-06).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <zerort/nn/local_parameter_store.hpp>
#include "data/token_file.hpp"
#include "data_cache.hpp"
#include "device_buffer.hpp"
#include "model/gpt2_model.hpp"

namespace gpt2::test {
namespace {
using namespace zrt::nn::test;  // device_tokens
using zrt::nn::LocalParameterStore;

template <class T>
struct D2Training {
  D2Training()
      : cfg(Gpt2Config::preset("d2")),
        store(parameter_layout(cfg)),
        model(cfg, store),
        acts(cfg, kB, kT, ActivationMode::keep) {}
  static constexpr int kB = 4, kT = 64;
  // One AdamW step (lr 6e-4, betas 0.9/0.95, eps 1e-8, weight decay 0.1, no warmup) on the
  // gradient of a batch; returns the batch's loss.
  T step(const std::vector<int> &tokens, const std::vector<int> &targets, int t) {
    auto tok = device_tokens(tokens), tgt = device_tokens(targets);
    const T loss = model.forward(acts, tok, tgt, kB, kT);
    store.begin_micro_step(false);
    model.backward(acts, tok, tgt, kB, kT, T(1));
    store.check_all_ready();
    auto w = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), store.values_flat());
    auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), store.grads_flat());
    const size_t n = w.extent(0);
    if (m.empty()) m.assign(n, T(0)), v.assign(n, T(0));
    const T lr = T(6e-4), b1 = T(0.9), b2 = T(0.95), eps = T(1e-8), wd = T(0.1);
    const T bc1 = T(1) - std::pow(b1, T(t + 1)), bc2 = T(1) - std::pow(b2, T(t + 1));
    for (size_t i = 0; i < n; ++i) {
      m[i] = b1 * m[i] + (T(1) - b1) * g(i);
      v[i] = b2 * v[i] + (T(1) - b2) * g(i) * g(i);
      w(i) -= lr * (m[i] / bc1 / (std::sqrt(v[i] / bc2) + eps) + wd * w(i));
    }
    Kokkos::deep_copy(store.values_flat(), w);
    return loss;
  }
  Gpt2Config cfg;
  LocalParameterStore<T> store;
  Gpt2Model<T> model;
  Activations<T> acts;
  std::vector<T> m, v;
};

TEST(Model, FloatLossesStayWithinRoundingOfDouble) {
  D2Training<float> f;
  D2Training<double> d;
  f.model.init_parameters(11);
  for (size_t id = 0; id < f.store.tensors().size(); ++id) {  // the same starting weights
    std::vector<float> w(static_cast<size_t>(f.store.tensors()[id].numel()));
    f.store.get(static_cast<int>(id), w.data());
    std::vector<double> wd(w.begin(), w.end());
    d.store.set(static_cast<int>(id), wd.data());
  }
  // Moby Dick's first batches (apps/data/prepare's tokens); the target is the next token.
  const TokenFile text = TokenFile::open(data_cache() / "moby-dick" / "train.bin",
                                         TokenFormat::automatic, f.cfg.vocab_size);
  const int n = D2Training<float>::kB * D2Training<float>::kT;
  double worst = 0;
  for (int t = 0; t < 10; ++t) {
    std::vector<int> tokens(n), targets(n);
    for (int i = 0; i < n; ++i) {
      tokens[i] = text.tokens()[static_cast<size_t>(t * n + i)];
      targets[i] = text.tokens()[static_cast<size_t>(t * n + i + 1)];
    }
    const double lf = f.step(tokens, targets, t), ld = d.step(tokens, targets, t);
    const double rel = std::abs(lf - ld) / ld;
    std::printf("  step %d: loss float %.9f double %.9f relative %.2e\n", t, lf, ld, rel);
    worst = std::max(worst, rel);
  }
  std::printf("  worst relative difference over 10 steps: %.2e\n", worst);
  EXPECT_LT(worst, 2e-7);
}

}  // namespace
}  // namespace gpt2::test
