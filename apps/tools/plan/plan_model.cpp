#include "plan_model.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "bert/model/bert_activations.hpp"
#include "bert/model/bert_config.hpp"
#include "bert/model/bert_layout.hpp"
#include "files/regular_file.hpp"
#include "gpt2/model/activations.hpp"
#include "gpt2/model/config.hpp"
#include "gpt2/model/parameter_layout.hpp"

namespace plan {

namespace {

[[noreturn]] void bad(const std::string &what) {
  throw std::invalid_argument(what);
}

int64_t count(const std::vector<zrt::nn::TensorSpec> &tensors) {
  int64_t n = 0;
  for (const zrt::nn::TensorSpec &t : tensors)
    n += t.numel();
  return n;
}

PlanModel from_gpt2(const gpt2::Gpt2Config &c) {
  PlanModel m;
  m.name = c.name;
  m.family = "gpt2";
  m.tensors = gpt2::parameter_layout(c);
  m.parameters = count(m.tensors);
  m.config = c.to_json();
  m.max_seq = c.max_seq_len;
  m.layers = c.num_layers;
  m.hidden = c.channels;
  m.carve = [c](int batch, int seq, ActivationMode mode, int) {
    ActivationBytes a;
    const gpt2::ActivationMode as =
        mode == ActivationMode::recompute ? gpt2::ActivationMode::recompute
        : mode == ActivationMode::offload ? gpt2::ActivationMode::offload
                                          : gpt2::ActivationMode::keep;
    a.resident = gpt2::Activations<float>::planned_bytes(c, batch, seq, as);
    if (mode == ActivationMode::offload)
      a.offloaded = gpt2::Activations<float>::planned_offloaded_bytes(c, batch, seq);
    return a;
  };
  return m;
}

PlanModel from_bert(const bert::BertConfig &c) {
  PlanModel m;
  m.name = c.name;
  m.family = "bert";
  m.tensors = bert::parameter_layout(c);
  m.parameters = count(m.tensors);
  m.config = c.to_json();
  m.max_seq = c.max_positions;
  m.layers = c.num_layers;
  m.hidden = c.hidden;
  m.carve = [c](int batch, int seq, ActivationMode mode, int max_predictions) {
    if (mode != ActivationMode::keep)
      bad(fmt::format("--activations {}: zrt-bert keeps every activation (keep)",
                      activation_mode_name(mode)));
    ActivationBytes a;
    // zrt-bert's default (pretraining_examples.cpp): the mask probability of the tokens.
    const int per_sequence =
        max_predictions >= 0 ? max_predictions : static_cast<int>(std::nearbyint(0.15 * seq));
    a.resident = bert::BertActivations<float>::planned_bytes(c, batch, seq, batch * per_sequence);
    return a;
  };
  return m;
}

}  // namespace

ActivationMode activation_mode(const std::string &name) {
  if (name == "keep") return ActivationMode::keep;
  if (name == "recompute") return ActivationMode::recompute;
  if (name == "offload") return ActivationMode::offload;
  bad(fmt::format("--activations {}: accepted values are keep, recompute and offload", name));
}

const char *activation_mode_name(ActivationMode mode) {
  switch (mode) {
    case ActivationMode::recompute:
      return "recompute";
    case ActivationMode::offload:
      return "offload";
    case ActivationMode::keep:
      break;
  }
  return "keep";
}

ActivationBytes PlanModel::activations(int batch, int seq, ActivationMode mode,
                                       int max_predictions) const {
  if (batch < 1) bad(fmt::format("--micro-batch is {}: it must be at least 1", batch));
  if (seq < 1) bad(fmt::format("--seq is {}: it must be at least 1", seq));
  return carve(batch, seq, mode, max_predictions);
}

PlanModel model_from_spec(const std::string &spec) {
  if (spec.ends_with(".json") || std::filesystem::is_regular_file(spec)) {
    std::string text;
    try {
      text = files::read_regular(spec);
    } catch (const files::Error &e) {
      bad(fmt::format("--model {}: cannot read the file: {}", spec, e.reason()));
    }
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      bad(fmt::format("--model {}: not a JSON object (a model configuration)", spec));
    const std::string type = j.value("model_type", std::string());
    const bool is_bert =
        type == "bert" ||
        (type.empty() && (j.contains("hidden_size") || j.contains("num_hidden_layers")));
    if (!type.empty() && type != "bert" && type != "gpt2")
      bad(fmt::format("--model {}: model_type \"{}\": zrt-plan knows gpt2 and bert", spec, type));
    return is_bert ? from_bert(bert::BertConfig::from_json_file(spec))
                   : from_gpt2(gpt2::Gpt2Config::from_json_file(spec));
  }
  if (spec.starts_with("bert")) return from_bert(bert::BertConfig::preset(spec));
  return from_gpt2(gpt2::Gpt2Config::from_name_or_file(spec));
}

PlanModel generic_model(int64_t params, int layers, int hidden, int heads) {
  if (layers < 1) bad(fmt::format("--layers is {}: it must be at least 1", layers));
  if (hidden < 1) bad(fmt::format("--hidden is {}: it must be at least 1", hidden));
  if (heads < 1) bad(fmt::format("--heads is {}: it must be at least 1", heads));
  if (hidden % heads != 0)
    bad(fmt::format("--heads {} does not divide --hidden {}", heads, hidden));
  gpt2::Gpt2Config c;
  c.name = fmt::format("{:.3g}B-L{}-H{}", static_cast<double>(params) / 1e9, layers, hidden);
  c.num_layers = layers;
  c.num_heads = heads;
  c.channels = hidden;
  c.vocab_size = 1;
  const int64_t fixed = c.num_parameters() - hidden;  // everything but the token embedding
  const int64_t rows = (params - fixed) / hidden;
  if (rows < 1)
    bad(fmt::format("--params {} is less than {} layers of width {} hold ({})", params, layers,
                    hidden, fixed + hidden));
  if (rows > (int64_t{1} << 31) - 1)
    bad(fmt::format("--params {}: the token embedding would have {} rows", params, rows));
  c.vocab_size = static_cast<int>(rows);
  PlanModel m = from_gpt2(c);
  m.family = "generic";
  m.config["vocab_size_derived"] = rows;
  return m;
}

}  // namespace plan
