#include "bert_config.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string_view>

#include <zerort/nn/nearest_name.hpp>
#include "files/json_file.hpp"

namespace bert {
namespace {

[[noreturn]] void bad(const std::string &what) {
  throw std::invalid_argument(what);
}

BertConfig make(const std::string &name, int layers, int hidden, int heads) {
  BertConfig c;
  c.name = name;
  c.num_layers = layers;
  c.hidden = hidden;
  c.num_heads = heads;
  c.intermediate = 4 * hidden;
  return c;
}

// The keys that shape the model.
const std::vector<std::string_view> kShapeKeys = {
    "base",       "num_hidden_layers",       "hidden_size",     "num_attention_heads",
    "vocab_size", "intermediate_size",       "type_vocab_size", "max_position_embeddings",
    "hidden_act", "position_embedding_type", "layer_norm_eps"};
// Hugging Face keys with no effect on what zrt-bert builds (metadata, token ids, the
// initializer's range, which is BERT's 0.02 here).
const std::vector<std::string_view> kMetadataKeys = {
    "_name_or_path", "architectures",     "model_type", "transformers_version",   "torch_dtype",
    "pad_token_id",  "initializer_range", "use_cache",  "gradient_checkpointing", "bos_token_id",
    "eos_token_id",  "directionality"};
// Keys that describe training features zrt-bert does not have: accepted (a Hub config has
// them) and reported back through BertConfig::not_used.
const std::vector<std::string_view> kNotUsedKeys = {
    "hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout"};

bool among(const std::vector<std::string_view> &names, const std::string &key) {
  return std::find(names.begin(), names.end(), key) != names.end();
}

}  // namespace

void BertConfig::validate() const {
  auto positive = [&](const char *field, int v) {
    if (v <= 0) bad(fmt::format("model config {}: {} must be positive, got {}", name, field, v));
  };
  positive("num_hidden_layers", num_layers);
  positive("hidden_size", hidden);
  positive("num_attention_heads", num_heads);
  positive("intermediate_size", intermediate);
  positive("vocab_size", vocab_size);
  positive("max_position_embeddings", max_positions);
  positive("type_vocab_size", type_vocab_size);
  if (hidden % num_heads != 0)
    bad(fmt::format("model config {}: num_attention_heads = {} does not divide hidden_size = {}",
                    name, num_heads, hidden));
  // The example files hold uint16 ids.
  if (vocab_size > 65536)
    bad(fmt::format("model config {}: vocab_size = {} exceeds 65536 (16-bit token ids)", name,
                    vocab_size));
  if (!(layer_norm_eps > 0) || layer_norm_eps > 1e-2)
    bad(fmt::format("model config {}: layer_norm_eps = {} is not in (0, 0.01]", name,
                    layer_norm_eps));
}

int64_t BertConfig::num_parameters() const {
  const int64_t H = hidden, I = intermediate, L = num_layers;
  const int64_t embeddings = (int64_t{vocab_size} + max_positions + type_vocab_size) * H + 2 * H;
  const int64_t per_layer = 4 * (H * H + H) + 2 * H + (I * H + I) + (H * I + H) + 2 * H;
  const int64_t pooler = H * H + H;
  const int64_t heads = (H * H + H) + 2 * H + vocab_size + (2 * H + 2);
  return embeddings + L * per_layer + pooler + heads;
}

nlohmann::json BertConfig::to_json() const {
  return {{"name", name},
          {"num_hidden_layers", num_layers},
          {"hidden_size", hidden},
          {"num_attention_heads", num_heads},
          {"intermediate_size", intermediate},
          {"vocab_size", vocab_size},
          {"max_position_embeddings", max_positions},
          {"type_vocab_size", type_vocab_size},
          {"layer_norm_eps", layer_norm_eps},
          {"hidden_act", "gelu"},
          {"parameters", num_parameters()}};
}

BertConfig BertConfig::preset(const std::string &name) {
  if (name == "bert-tiny") return make(name, 2, 128, 2);
  if (name == "bert-mini") return make(name, 4, 256, 4);
  if (name == "bert-small") return make(name, 4, 512, 8);
  if (name == "bert-medium") return make(name, 8, 512, 8);
  if (name == "bert-base") return make(name, 12, 768, 12);
  if (name == "bert-large") return make(name, 24, 1024, 16);
  bad(
      fmt::format("unknown model config '{}': expected bert-tiny, bert-mini, bert-small, "
                  "bert-medium, bert-base, bert-large or a .json file (Hugging Face's "
                  "BertConfig keys)",
                  name));
}

BertConfig BertConfig::from_json(const nlohmann::json &j, const std::string &name) {
  if (!j.is_object()) bad(fmt::format("model config {}: expected a JSON object", name));
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string &key = it.key();
    if (among(kShapeKeys, key) || among(kMetadataKeys, key) || among(kNotUsedKeys, key)) continue;
    const std::string best = zrt::nn::nearest_name(key, kShapeKeys);
    bad(
        fmt::format("model config {}: unknown key \"{}\"{}; the model keys are "
                    "num_hidden_layers, hidden_size, num_attention_heads, intermediate_size, "
                    "vocab_size, max_position_embeddings, type_vocab_size, layer_norm_eps "
                    "(and \"base\")",
                    name, key, best.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", best)));
  }
  BertConfig c;
  const bool have_base = j.contains("base");
  if (have_base) {
    if (!j["base"].is_string()) bad(fmt::format("model config {}: \"base\" must be a name", name));
    c = preset(j["base"].get<std::string>());
  }
  c.name = name;
  auto read = [&](const char *key, int &field, bool required) {
    if (!j.contains(key)) {
      if (required)
        bad(fmt::format("model config {}: missing \"{}\" (or give \"base\": a preset name)", name,
                        key));
      return;
    }
    if (!j[key].is_number_integer())
      bad(fmt::format("model config {}: \"{}\" must be an integer, got {}", name, key,
                      j[key].dump()));
    field = j[key].get<int>();
  };
  read("num_hidden_layers", c.num_layers, !have_base);
  read("hidden_size", c.hidden, !have_base);
  read("num_attention_heads", c.num_heads, !have_base);
  if (!have_base) c.intermediate = 4 * c.hidden;
  read("intermediate_size", c.intermediate, false);
  read("vocab_size", c.vocab_size, false);
  read("max_position_embeddings", c.max_positions, false);
  read("type_vocab_size", c.type_vocab_size, false);
  if (j.contains("layer_norm_eps")) {
    if (!j["layer_norm_eps"].is_number())
      bad(fmt::format("model config {}: \"layer_norm_eps\" must be a number, got {}", name,
                      j["layer_norm_eps"].dump()));
    c.layer_norm_eps = j["layer_norm_eps"].get<double>();
  }
  // Keys that would change the model: only BERT's own choices are built.
  if (j.contains("hidden_act") && j["hidden_act"] != "gelu")
    bad(
        fmt::format("model config {}: \"hidden_act\" {} is not supported: zrt-bert uses BERT's "
                    "exact (erf) GELU, \"gelu\"",
                    name, j["hidden_act"].dump()));
  if (j.contains("position_embedding_type") && j["position_embedding_type"] != "absolute")
    bad(
        fmt::format("model config {}: \"position_embedding_type\" {} is not supported: "
                    "zrt-bert has BERT's learned absolute positions",
                    name, j["position_embedding_type"].dump()));
  for (std::string_view key : kNotUsedKeys) {
    const std::string k(key);
    if (j.contains(k) && !j[k].is_null() && !(j[k].is_number() && j[k].get<double>() == 0))
      c.not_used.push_back(fmt::format("{} {}", k, j[k].dump()));
  }
  c.validate();
  return c;
}

BertConfig BertConfig::from_json_file(const std::filesystem::path &file) {
  return from_json(files::read_json_file(file, "model config"), file.string());
}

BertConfig BertConfig::from_name_or_file(const std::string &spec) {
  if (spec.ends_with(".json") || std::filesystem::is_regular_file(spec))
    return from_json_file(spec);
  BertConfig c = preset(spec);
  c.validate();
  return c;
}

}  // namespace bert
