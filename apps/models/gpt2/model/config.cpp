#include "config.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <zerort/nn/nearest_name.hpp>
#include "files/json_file.hpp"

namespace gpt2 {
namespace {

[[noreturn]] void bad(const std::string &what) {
  throw std::invalid_argument(what);
}

Gpt2Config make(const std::string &name, int layers, int heads, int channels) {
  Gpt2Config c;
  c.name = name;
  c.num_layers = layers;
  c.num_heads = heads;
  c.channels = channels;
  return c;
}

}  // namespace

void Gpt2Config::validate() const {
  auto positive = [&](const char *field, int v) {
    if (v <= 0) bad(fmt::format("model config {}: {} must be positive, got {}", name, field, v));
  };
  positive("n_layer", num_layers);
  positive("n_head", num_heads);
  positive("n_embd", channels);
  positive("vocab_size", vocab_size);
  positive("n_positions", max_seq_len);
  if (channels % num_heads != 0)
    bad(fmt::format("model config {}: n_head = {} does not divide n_embd = {}", name, num_heads,
                    channels));
  // Token files hold uint16 ids.
  if (vocab_size > 65536)
    bad(fmt::format("model config {}: vocab_size = {} exceeds 65536 (16-bit token ids)", name,
                    vocab_size));
}

int64_t Gpt2Config::num_parameters() const {
  const int64_t C = channels, L = num_layers;
  int64_t per_layer =
      2 * C + (3 * C * C + 3 * C) + (C * C + C) + 2 * C + (4 * C * C + 4 * C) + (4 * C * C + C);
  return int64_t{vocab_size} * C + int64_t{max_seq_len} * C + L * per_layer + 2 * C;
}

nlohmann::json Gpt2Config::to_json() const {
  return {{"name", name},
          {"n_layer", num_layers},
          {"n_head", num_heads},
          {"n_embd", channels},
          {"vocab_size", vocab_size},
          {"n_positions", max_seq_len},
          {"parameters", num_parameters()}};
}

Gpt2Config Gpt2Config::preset(const std::string &name) {
  if (name == "gpt2" || name == "gpt2-small") return make(name, 12, 12, 768);
  if (name == "gpt2-medium") return make(name, 24, 16, 1024);
  if (name == "gpt2-large") return make(name, 36, 20, 1280);
  if (name == "gpt2-xl") return make(name, 48, 25, 1600);
  if (name.size() > 1 && name[0] == 'd' &&
      name.find_first_not_of("0123456789", 1) == std::string::npos && name.size() <= 4) {
    int depth = std::stoi(name.substr(1));
    if (depth > 0) return make(name, depth, depth, 64 * depth);
  }
  bad(
      fmt::format("unknown model config '{}': expected gpt2, gpt2-medium, gpt2-large, gpt2-xl, "
                  "dN (N layers of 64*N channels, e.g. d2, d6, d12) or a .json file",
                  name));
}

namespace {

// The keys a model config may hold: ours, and those of Hugging Face's GPT2Config that do
// not change the model zrt-gpt2 builds (dropout, initialization, token ids, metadata), so a
// config.json from the Hub works as it is. A misspelt key is an error with the nearest
// names, as zerort's own configuration keys are.
constexpr const char *kShapeKeys[] = {"base",       "n_layer",     "n_head", "n_embd",
                                      "vocab_size", "n_positions", "n_ctx",  "block_size"};
constexpr const char *kHfKeys[] = {"_name_or_path",
                                   "activation_function",
                                   "architectures",
                                   "attn_pdrop",
                                   "bos_token_id",
                                   "embd_pdrop",
                                   "eos_token_id",
                                   "initializer_range",
                                   "layer_norm_epsilon",
                                   "model_type",
                                   "n_inner",
                                   "pad_token_id",
                                   "reorder_and_upcast_attn",
                                   "resid_pdrop",
                                   "scale_attn_by_inverse_layer_idx",
                                   "scale_attn_weights",
                                   "summary_activation",
                                   "summary_first_dropout",
                                   "summary_proj_to_labels",
                                   "summary_type",
                                   "summary_use_proj",
                                   "task_specific_params",
                                   "tokenizer_class",
                                   "torch_dtype",
                                   "transformers_version",
                                   "use_cache"};

void check_keys(const nlohmann::json &j, const std::string &name) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string &key = it.key();
    const auto is = [&](const char *k) { return key == k; };
    if (std::any_of(std::begin(kShapeKeys), std::end(kShapeKeys), is) ||
        std::any_of(std::begin(kHfKeys), std::end(kHfKeys), is))
      continue;
    const std::string best = zrt::nn::nearest_name(
        key, std::vector<std::string_view>(std::begin(kShapeKeys), std::end(kShapeKeys)));
    bad(
        fmt::format("model config {}: unknown key \"{}\"{}; the model keys are n_layer, n_head, "
                    "n_embd, vocab_size, n_positions (and \"base\")",
                    name, key, best.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", best)));
  }
  // Hugging Face keys that would change the model: only GPT-2's own values are built.
  if (j.contains("n_inner") && !j["n_inner"].is_null())
    bad(
        fmt::format("model config {}: \"n_inner\" {} is not supported: zrt-gpt2's MLP is 4 x "
                    "n_embd (n_inner null)",
                    name, j["n_inner"].dump()));
  if (j.contains("activation_function") && j["activation_function"] != "gelu_new")
    bad(
        fmt::format("model config {}: \"activation_function\" {} is not supported: zrt-gpt2 "
                    "uses GPT-2's tanh GELU (\"gelu_new\")",
                    name, j["activation_function"].dump()));
}

}  // namespace

Gpt2Config Gpt2Config::from_json(const nlohmann::json &j, const std::string &name) {
  if (!j.is_object()) bad(fmt::format("model config {}: expected a JSON object", name));
  Gpt2Config c;
  bool have_base = j.contains("base");
  if (have_base) {
    if (!j["base"].is_string()) bad(fmt::format("model config {}: \"base\" must be a name", name));
    c = preset(j["base"].get<std::string>());
  }
  c.name = name;
  auto read = [&](std::initializer_list<const char *> keys, int &field, bool required) {
    for (const char *key : keys) {
      if (!j.contains(key)) continue;
      if (!j[key].is_number_integer())
        bad(fmt::format("model config {}: \"{}\" must be an integer, got {}", name, key,
                        j[key].dump()));
      field = j[key].get<int>();
      return;
    }
    if (required)
      bad(fmt::format("model config {}: missing \"{}\" (or give \"base\": a preset name)", name,
                      *keys.begin()));
  };
  check_keys(j, name);
  read({"n_layer"}, c.num_layers, !have_base);
  read({"n_head"}, c.num_heads, !have_base);
  read({"n_embd"}, c.channels, !have_base);
  read({"vocab_size"}, c.vocab_size, false);
  read({"n_positions", "n_ctx", "block_size"}, c.max_seq_len, false);
  c.validate();
  return c;
}

Gpt2Config Gpt2Config::from_json_file(const std::filesystem::path &file) {
  return from_json(files::read_json_file(file, "model config"), file.string());
}

Gpt2Config Gpt2Config::from_name_or_file(const std::string &spec) {
  if (spec.ends_with(".json") || std::filesystem::is_regular_file(spec))
    return from_json_file(spec);
  Gpt2Config c = preset(spec);
  c.validate();
  return c;
}

}  // namespace gpt2
