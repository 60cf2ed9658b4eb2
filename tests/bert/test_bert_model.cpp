// BERT's model: every tensor's gradient against finite differences in double precision,
// the losses of a fresh model, the padding mask, the configurations and the layout's
// names, and the batch's bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <string>

#include <zerort/nn/local_parameter_store.hpp>
#include "device_buffer.hpp"
#include "host_grad.hpp"
#include "model/bert_model.hpp"

namespace bert::test {
namespace {

using zrt::nn::LocalParameterStore;
using zrt::nn::Unmanaged;
using zrt::nn::test::host_grad;

// A model small enough for finite differences over every tensor.
BertConfig tiny() {
  return BertConfig::from_json({{"num_hidden_layers", 2},
                                {"hidden_size", 8},
                                {"num_attention_heads", 2},
                                {"intermediate_size", 16},
                                {"vocab_size", 30},
                                {"max_position_embeddings", 10}},
                               "tiny-test");
}

// B sequences of the given lengths, padded to T, with random tokens (ids 5.., as the
// specials sit below), segments split in the middle, some positions masked.
HostBatch random_batch(const std::vector<int> &lengths, int T, int vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  HostBatch h;
  h.B = static_cast<int>(lengths.size());
  h.T = T;
  h.lengths = lengths;
  for (int b = 0; b < h.B; ++b) {
    const int len = lengths[static_cast<size_t>(b)];
    for (int t = 0; t < T; ++t) {
      const bool real = t < len;
      h.input_ids.push_back(real ? 5 + static_cast<int>(rng() % uint64_t(vocab - 5)) : 0);
      h.segment_ids.push_back(real && t >= len / 2 ? 1 : 0);
      // Mask about a third of the real positions after [CLS], at least one per sequence.
      const bool masked = real && t > 0 && (t == 1 || rng() % 3 == 0);
      h.mlm_labels.push_back(masked ? 5 + static_cast<int>(rng() % uint64_t(vocab - 5)) : -1);
    }
    h.nsp_labels.push_back(static_cast<int>(rng() % 2));
  }
  return h;
}

TEST(BertModel, GradientsMatchFiniteDifferencesForEveryTensor) {
  const BertConfig cfg = tiny();
  LocalParameterStore<double> store(parameter_layout(cfg));
  BertModel<double> model(cfg, store);
  model.init_parameters(11);
  // Larger weights than BERT's 0.02, so every path carries gradient well above noise.
  std::mt19937_64 rng(12);
  for (size_t id = 0; id < store.tensors().size(); ++id) {
    std::vector<double> v(static_cast<size_t>(store.tensors()[id].numel()));
    std::normal_distribution<double> n(0.0, 0.5);
    for (double &x : v)
      x = store.tensors()[id].name.ends_with("LayerNorm.weight") ? 1.0 + 0.3 * n(rng) : n(rng);
    store.set(static_cast<int>(id), v.data());
  }
  const int T = 6;
  DeviceBatch device(3, T);
  device.set(random_batch({6, 4, 2}, T, cfg.vocab_size, 13), cfg.vocab_size, 2);
  const BertBatch &batch = device.view();
  BertActivations<double> acts(cfg, 3, T);
  auto loss = [&] { return model.forward(acts, batch).total(); };
  loss();
  store.begin_micro_step(false);
  model.backward(acts, batch, 1.0 / batch.P, 1.0 / batch.B);
  store.check_all_ready();

  double worst = 0;
  std::mt19937_64 pick_rng(14);
  for (size_t id = 0; id < store.tensors().size(); ++id) {
    const TensorSpec &t = store.tensors()[id];
    std::vector<double> grad = host_grad(store, static_cast<int>(id));
    std::vector<double> values(grad.size());
    store.get(static_cast<int>(id), values.data());
    std::set<size_t> pick;
    const size_t largest = static_cast<size_t>(
        std::max_element(grad.begin(), grad.end(),
                         [](double a, double b) { return std::abs(a) < std::abs(b); }) -
        grad.begin());
    pick.insert(largest);
    while (pick.size() < std::min<size_t>(6, grad.size()))
      pick.insert(static_cast<size_t>(pick_rng() % grad.size()));
    double tensor_worst = 0;
    const double h = 1e-6;
    for (size_t i : pick) {
      const double orig = values[i];
      values[i] = orig + h;
      store.set(static_cast<int>(id), values.data());
      const double plus = loss();
      values[i] = orig - h;
      store.set(static_cast<int>(id), values.data());
      const double minus = loss();
      values[i] = orig;
      store.set(static_cast<int>(id), values.data());
      const double numeric = (plus - minus) / (2 * h);
      tensor_worst = std::max(
          tensor_worst, std::abs(numeric - grad[i]) / std::max(std::abs(grad[largest]), 1e-3));
    }
    std::printf("  %-52s max |grad| %.2e  error %.2e\n", t.name.c_str(), std::abs(grad[largest]),
                tensor_worst);
    EXPECT_LT(tensor_worst, 1e-6) << t.name;
    // Except the key bias: q.(k + b) shifts a query's scores over all keys by the same
    // q.b, which the softmax cancels, so its gradient is 0 in exact arithmetic.
    if (!t.name.ends_with("key.bias")) {
      EXPECT_GT(std::abs(grad[largest]), 1e-4) << t.name << " gets no gradient";
    } else {
      EXPECT_LT(std::abs(grad[largest]), 1e-12) << t.name;
    }
    worst = std::max(worst, tensor_worst);
  }
  std::printf("  worst relative error over all %zu tensors: %.2e\n", store.tensors().size(), worst);
}

TEST(BertModel, PaddingChangesNothing) {
  // What sits in the padding (its tokens, its segment ids) and how far a batch is padded
  // leave the losses exactly as they were.
  const BertConfig cfg = tiny();
  LocalParameterStore<double> store(parameter_layout(cfg));
  BertModel<double> model(cfg, store);
  model.init_parameters(21);
  HostBatch h = random_batch({5, 3}, 6, cfg.vocab_size, 22);
  DeviceBatch device(2, 9);
  BertActivations<double> acts(cfg, 2, 9);
  device.set(h, cfg.vocab_size, 2);
  const BertLosses before = model.forward(acts, device.view());
  for (int i = 0; i < h.B * h.T; ++i)
    if (i % h.T >= h.lengths[static_cast<size_t>(i / h.T)]) {
      h.input_ids[static_cast<size_t>(i)] = 7 + i % 11;
      h.segment_ids[static_cast<size_t>(i)] = 1;
    }
  device.set(h, cfg.vocab_size, 2);
  const BertLosses changed = model.forward(acts, device.view());
  EXPECT_EQ(changed.mlm, before.mlm);
  EXPECT_EQ(changed.nsp, before.nsp);
  // The same sequences padded to 9: the same losses up to the sums' rounding.
  HostBatch wide = h;
  wide.T = 9;
  auto widen = [&](const std::vector<int> &v, int fill) {
    std::vector<int> out;
    for (int b = 0; b < h.B; ++b) {
      out.insert(out.end(), v.begin() + b * h.T, v.begin() + (b + 1) * h.T);
      out.insert(out.end(), 3, fill);
    }
    return out;
  };
  wide.input_ids = widen(h.input_ids, 0);
  wide.segment_ids = widen(h.segment_ids, 0);
  wide.mlm_labels = widen(h.mlm_labels, -1);
  device.set(wide, cfg.vocab_size, 2);
  const BertLosses padded = model.forward(acts, device.view());
  EXPECT_NEAR(padded.mlm, before.mlm, 1e-12);
  EXPECT_NEAR(padded.nsp, before.nsp, 1e-12);
}

TEST(BertModel, FreshModelPredictsUniformly) {
  // BERT's initialization (weights N(0, 0.02)) gives near-uniform predictions: the MLM
  // loss is near ln(30522) and the NSP loss near ln 2.
  const BertConfig cfg = BertConfig::preset("bert-tiny");
  LocalParameterStore<float> store(parameter_layout(cfg));
  BertModel<float> model(cfg, store);
  model.init_parameters(1337);
  const int B = 4, T = 32;
  DeviceBatch device(B, T);
  device.set(random_batch({32, 20, 32, 9}, T, cfg.vocab_size, 31), cfg.vocab_size, 2);
  BertActivations<float> acts(cfg, B, T);
  const BertLosses l = model.forward(acts, device.view());
  std::printf("  initial MLM loss %.4f (ln V = %.4f), NSP loss %.4f (ln 2 = %.4f)\n", l.mlm,
              std::log(30522.0), l.nsp, std::log(2.0));
  EXPECT_NEAR(l.mlm, std::log(30522.0), 0.15);
  EXPECT_NEAR(l.nsp, std::log(2.0), 0.05);
  EXPECT_EQ(l.mlm_count, device.view().P);
  EXPECT_EQ(l.nsp_count, B);
}

TEST(BertConfig, PresetsHaveGooglesSizesAndHuggingFacesParameterCounts) {
  struct Want {
    const char *name;
    int L, H, A;
  };
  for (const Want &w : {Want{"bert-tiny", 2, 128, 2}, Want{"bert-mini", 4, 256, 4},
                        Want{"bert-small", 4, 512, 8}, Want{"bert-medium", 8, 512, 8},
                        Want{"bert-base", 12, 768, 12}, Want{"bert-large", 24, 1024, 16}}) {
    const BertConfig c = BertConfig::preset(w.name);
    EXPECT_EQ(c.num_layers, w.L);
    EXPECT_EQ(c.hidden, w.H);
    EXPECT_EQ(c.num_heads, w.A);
    EXPECT_EQ(c.intermediate, 4 * w.H);
    int64_t sum = 0, encoder = 0;
    for (const TensorSpec &t : parameter_layout(c)) {
      sum += t.numel();
      if (t.name.starts_with("bert.")) encoder += t.numel();
    }
    EXPECT_EQ(sum, c.num_parameters()) << w.name;
    // BertModel's parameters (without the pretraining heads), as transformers counts
    // them for bert-base-uncased and bert-large-uncased.
    if (std::string(w.name) == "bert-base") {
      EXPECT_EQ(encoder, 109482240);
    }
    if (std::string(w.name) == "bert-large") {
      EXPECT_EQ(encoder, 335141888);
    }
  }
  EXPECT_THROW(BertConfig::preset("bert-huge"), std::invalid_argument);
}

TEST(BertConfig, ReadsHuggingFacesConfigJson) {
  const BertConfig c = BertConfig::from_json_file(BERT_CONFIG_DIR "/bert-base-uncased.json");
  const BertConfig base = BertConfig::preset("bert-base");
  EXPECT_EQ(c.num_layers, base.num_layers);
  EXPECT_EQ(c.hidden, base.hidden);
  EXPECT_EQ(c.num_heads, base.num_heads);
  EXPECT_EQ(c.intermediate, base.intermediate);
  EXPECT_EQ(c.vocab_size, 30522);
  EXPECT_EQ(c.max_positions, 512);
  EXPECT_EQ(c.layer_norm_eps, 1e-12);
  // Dropout is reported as not used, not dropped silently.
  ASSERT_EQ(c.not_used.size(), 2u);
  EXPECT_EQ(c.not_used[0], "hidden_dropout_prob 0.1");
  EXPECT_EQ(c.not_used[1], "attention_probs_dropout_prob 0.1");
}

std::string config_error(const nlohmann::json &j) {
  try {
    BertConfig::from_json(j, "test.json");
  } catch (const std::invalid_argument &e) {
    return e.what();
  }
  return "";
}

TEST(BertConfig, RefusesWhatItCannotBuild) {
  EXPECT_NE(config_error({{"base", "bert-tiny"}, {"hiden_size", 64}})
                .find("did you mean \"hidden_size\""),
            std::string::npos);
  EXPECT_NE(config_error({{"base", "bert-tiny"}, {"hidden_act", "relu"}}).find("hidden_act"),
            std::string::npos);
  EXPECT_NE(config_error({{"base", "bert-tiny"}, {"position_embedding_type", "relative_key"}})
                .find("position_embedding_type"),
            std::string::npos);
  EXPECT_NE(config_error({{"base", "bert-tiny"}, {"num_attention_heads", 3}}).find("divide"),
            std::string::npos);
  EXPECT_NE(config_error({{"hidden_size", 64}}).find("missing \"num_hidden_layers\""),
            std::string::npos);
  EXPECT_NE(config_error({{"base", "bert-tiny"}, {"vocab_size", 70000}}).find("16-bit"),
            std::string::npos);
  EXPECT_NE(config_error({{"base", "bert-tiny"}, {"layer_norm_eps", "small"}}).find("number"),
            std::string::npos);
}

TEST(BertLayout, NamesAreHuggingFacesBertForPreTraining) {
  const std::vector<TensorSpec> t = parameter_layout(BertConfig::preset("bert-tiny"));
  std::set<std::string> names;
  for (const TensorSpec &s : t)
    names.insert(s.name);
  EXPECT_EQ(names.size(), t.size());
  for (const char *n :
       {"bert.embeddings.word_embeddings.weight", "bert.embeddings.position_embeddings.weight",
        "bert.embeddings.token_type_embeddings.weight", "bert.embeddings.LayerNorm.weight",
        "bert.encoder.layer.1.attention.self.query.weight",
        "bert.encoder.layer.1.attention.output.LayerNorm.bias",
        "bert.encoder.layer.0.intermediate.dense.weight", "bert.encoder.layer.0.output.dense.bias",
        "bert.pooler.dense.weight", "cls.predictions.bias",
        "cls.predictions.transform.dense.weight", "cls.predictions.transform.LayerNorm.weight",
        "cls.seq_relationship.weight"})
    EXPECT_TRUE(names.count(n)) << n;
  // Biases and LayerNorm parameters get no weight decay (BERT's exclusion list).
  for (const TensorSpec &s : t)
    EXPECT_EQ(s.weight_decay,
              !(s.name.ends_with(".bias") || s.name.find("LayerNorm") != std::string::npos))
        << s.name;
}

std::string batch_error(const HostBatch &h, int vocab = 30) {
  DeviceBatch device(4, 8);
  try {
    device.set(h, vocab, 2);
  } catch (const std::invalid_argument &e) {
    return e.what();
  }
  return "";
}

TEST(BertBatch, RefusesIdsBeyondTheVocabularyAndOtherBadInput) {
  const HostBatch good = random_batch({6, 4}, 6, 30, 41);
  EXPECT_EQ(batch_error(good), "");
  HostBatch h = good;
  h.input_ids[3] = 30;
  EXPECT_NE(batch_error(h).find("token id 30 at position 3 is outside the vocabulary of 30"),
            std::string::npos);
  h = good;
  h.lengths[1] = 7;
  EXPECT_NE(batch_error(h).find("length 7"), std::string::npos);
  h = good;
  h.mlm_labels.assign(h.mlm_labels.size(), -1);
  EXPECT_NE(batch_error(h).find("no masked position"), std::string::npos);
  h = good;
  h.mlm_labels[11] = 9;  // sequence 1, position 5: past its 4 tokens
  EXPECT_NE(batch_error(h).find("padded position"), std::string::npos);
  h = good;
  h.segment_ids[0] = 2;
  EXPECT_NE(batch_error(h).find("segment id 2"), std::string::npos);
  h = good;
  h.T = 9;
  EXPECT_NE(batch_error(h).find("does not fit"), std::string::npos);
}

TEST(BertModel, RefusesSequencesBeyondItsPositions) {
  const BertConfig cfg = tiny();  // 10 positions
  LocalParameterStore<float> store(parameter_layout(cfg));
  BertModel<float> model(cfg, store);
  DeviceBatch device(1, 12);
  device.set(random_batch({12}, 12, cfg.vocab_size, 51), cfg.vocab_size, 2);
  BertActivations<float> acts(cfg, 1, 12);
  try {
    model.forward(acts, device.view());
    FAIL() << "a 12-token sequence passed a model of 10 positions";
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find("max_position_embeddings"), std::string::npos);
  }
}

}  // namespace
}  // namespace bert::test
