#include "hf_names.hpp"

#include <array>
#include <cctype>
#include <utility>

namespace weights {
namespace {

// One row per tensor kind; "{l}" is a layer number. transposed: stored [in, out] there.
struct Rule {
  const char *ours, *theirs;
  bool transposed;
};

constexpr std::array kGpt2 = {
    Rule{"wte", "wte.weight", false},
    Rule{"wpe", "wpe.weight", false},
    Rule{"h{l}.ln_1.weight", "h.{l}.ln_1.weight", false},
    Rule{"h{l}.ln_1.bias", "h.{l}.ln_1.bias", false},
    Rule{"h{l}.attn.qkv.weight", "h.{l}.attn.c_attn.weight", true},
    Rule{"h{l}.attn.qkv.bias", "h.{l}.attn.c_attn.bias", false},
    Rule{"h{l}.attn.proj.weight", "h.{l}.attn.c_proj.weight", true},
    Rule{"h{l}.attn.proj.bias", "h.{l}.attn.c_proj.bias", false},
    Rule{"h{l}.ln_2.weight", "h.{l}.ln_2.weight", false},
    Rule{"h{l}.ln_2.bias", "h.{l}.ln_2.bias", false},
    Rule{"h{l}.mlp.fc.weight", "h.{l}.mlp.c_fc.weight", true},
    Rule{"h{l}.mlp.fc.bias", "h.{l}.mlp.c_fc.bias", false},
    Rule{"h{l}.mlp.proj.weight", "h.{l}.mlp.c_proj.weight", true},
    Rule{"h{l}.mlp.proj.bias", "h.{l}.mlp.c_proj.bias", false},
    Rule{"ln_f.weight", "ln_f.weight", false},
    Rule{"ln_f.bias", "ln_f.bias", false},
};

#define ZRT_BERT_SAME(name) \
  Rule {                    \
    name, name, false       \
  }
constexpr std::array kBert = {
    ZRT_BERT_SAME("bert.embeddings.word_embeddings.weight"),
    ZRT_BERT_SAME("bert.embeddings.position_embeddings.weight"),
    ZRT_BERT_SAME("bert.embeddings.token_type_embeddings.weight"),
    ZRT_BERT_SAME("bert.embeddings.LayerNorm.weight"),
    ZRT_BERT_SAME("bert.embeddings.LayerNorm.bias"),
    ZRT_BERT_SAME("bert.encoder.layer.{l}.attention.self.query.weight"),
    ZRT_BERT_SAME("bert.encoder.layer.{l}.attention.self.query.bias"),
    ZRT_BERT_SAME("bert.encoder.layer.{l}.attention.self.key.weight"),
    ZRT_BERT_SAME("bert.encoder.layer.{l}.attention.self.key.bias"),
    ZRT_BERT_SAME("bert.encoder.layer.{l}.attention.self.value.weight"),
    ZRT_BERT_SAME("bert.encoder.layer.{l}.attention.self.value.bias"),
    ZRT_BERT_SAME("bert.encoder.layer.{l}.attention.output.dense.weight"),
    ZRT_BERT_SAME("bert.encoder.layer.{l}.attention.output.dense.bias"),
    ZRT_BERT_SAME("bert.encoder.layer.{l}.attention.output.LayerNorm.weight"),
    ZRT_BERT_SAME("bert.encoder.layer.{l}.attention.output.LayerNorm.bias"),
    ZRT_BERT_SAME("bert.encoder.layer.{l}.intermediate.dense.weight"),
    ZRT_BERT_SAME("bert.encoder.layer.{l}.intermediate.dense.bias"),
    ZRT_BERT_SAME("bert.encoder.layer.{l}.output.dense.weight"),
    ZRT_BERT_SAME("bert.encoder.layer.{l}.output.dense.bias"),
    ZRT_BERT_SAME("bert.encoder.layer.{l}.output.LayerNorm.weight"),
    ZRT_BERT_SAME("bert.encoder.layer.{l}.output.LayerNorm.bias"),
    ZRT_BERT_SAME("bert.pooler.dense.weight"),
    ZRT_BERT_SAME("bert.pooler.dense.bias"),
    ZRT_BERT_SAME("cls.seq_relationship.weight"),
    ZRT_BERT_SAME("cls.seq_relationship.bias"),
    ZRT_BERT_SAME("cls.predictions.transform.dense.weight"),
    ZRT_BERT_SAME("cls.predictions.transform.dense.bias"),
    ZRT_BERT_SAME("cls.predictions.transform.LayerNorm.weight"),
    ZRT_BERT_SAME("cls.predictions.transform.LayerNorm.bias"),
    ZRT_BERT_SAME("cls.predictions.bias"),
};
#undef ZRT_BERT_SAME

// Matches @p name against @p pattern ("{l}" standing for a decimal number); on a match,
// the number (or "" when the pattern has none) in @p layer.
bool match(std::string_view pattern, std::string_view name, std::string &layer) {
  const size_t hole = pattern.find("{l}");
  if (hole == std::string_view::npos) {
    layer.clear();
    return pattern == name;
  }
  const std::string_view head = pattern.substr(0, hole), tail = pattern.substr(hole + 3);
  if (name.size() <= head.size() + tail.size() || !name.starts_with(head) || !name.ends_with(tail))
    return false;
  const std::string_view digits = name.substr(head.size(), name.size() - head.size() - tail.size());
  for (char c : digits)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  if (digits.size() > 1 && digits[0] == '0') return false;  // "h01" is no layer
  layer = digits;
  return true;
}

std::string fill(std::string_view pattern, const std::string &layer) {
  std::string out(pattern);
  if (size_t hole = out.find("{l}"); hole != std::string::npos) out.replace(hole, 3, layer);
  return out;
}

template <size_t N>
std::optional<MappedName> map(const std::array<Rule, N> &rules, std::string_view name,
                              bool to_theirs) {
  std::string layer;
  for (const Rule &r : rules)
    if (match(to_theirs ? r.ours : r.theirs, name, layer))
      return MappedName{fill(to_theirs ? r.theirs : r.ours, layer), r.transposed};
  return std::nullopt;
}

// A Hugging Face name in the table's spelling: GPT-2 without "transformer.", BERT with
// "bert." and with weight/bias for the old LayerNorm gamma/beta.
std::string normalized(ModelKind kind, std::string_view theirs) {
  std::string name(theirs);
  if (kind == ModelKind::gpt2) {
    if (name.starts_with("transformer.")) name.erase(0, 12);
    return name;
  }
  for (const char *root : {"embeddings.", "encoder.", "pooler."})
    if (name.starts_with(root)) name = "bert." + name;
  for (auto [old_name, new_name] : {std::pair{".gamma", ".weight"}, std::pair{".beta", ".bias"}})
    if (name.ends_with(old_name) && name.find("LayerNorm") != std::string::npos)
      name = name.substr(0, name.size() - std::string_view(old_name).size()) + new_name;
  return name;
}

}  // namespace

std::optional<ModelKind> model_kind(std::string_view name) {
  if (name == "gpt2" || name == "zrt-gpt2") return ModelKind::gpt2;
  if (name == "bert" || name == "zrt-bert") return ModelKind::bert;
  return std::nullopt;
}

const char *model_kind_name(ModelKind kind) {
  return kind == ModelKind::gpt2 ? "GPT-2" : "BERT";
}

std::optional<MappedName> to_hf(ModelKind kind, std::string_view ours) {
  return kind == ModelKind::gpt2 ? map(kGpt2, ours, true) : map(kBert, ours, true);
}

std::optional<MappedName> from_hf(ModelKind kind, std::string_view theirs) {
  const std::string name = normalized(kind, theirs);
  return kind == ModelKind::gpt2 ? map(kGpt2, name, false) : map(kBert, name, false);
}

bool hf_not_a_parameter(ModelKind kind, std::string_view theirs) {
  const std::string name = normalized(kind, theirs);
  std::string layer;
  if (kind == ModelKind::gpt2)
    return match("h.{l}.attn.bias", name, layer) || match("h.{l}.attn.masked_bias", name, layer) ||
           name == "lm_head.weight";
  return name == "bert.embeddings.position_ids" || name == "cls.predictions.decoder.weight" ||
         name == "cls.predictions.decoder.bias";
}

std::vector<float> transposed(const std::vector<float> &values, std::vector<int64_t> &shape) {
  const int64_t a = shape[0], b = shape[1];
  std::vector<float> out(values.size());
  for (int64_t r = 0; r < a; ++r)
    for (int64_t c = 0; c < b; ++c)
      out[static_cast<size_t>(c * a + r)] = values[static_cast<size_t>(r * b + c)];
  std::swap(shape[0], shape[1]);
  return out;
}

}  // namespace weights
