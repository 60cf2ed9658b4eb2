// Hugging Face's names and layouts for the apps' models, one table per model, used both
// ways: --init-from reads a Hugging Face file into zrt-gpt2 or zrt-bert, and
// zrt-ckpt export --names hf writes one.
//   GPT-2 (GPT2LMHeadModel): "h.0.attn.c_attn.weight", with or without "transformer.";
//     its Conv1D weights are stored [in, out], transposed against zrt-gpt2's [out, in].
//   BERT (BertForPreTraining): zrt-bert uses its names and nn.Linear's [out, in] already;
//     a BertModel file (no "bert." prefix) and the old LayerNorm names (gamma, beta) are
//     read as well.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weights {

enum class ModelKind { gpt2, bert };

/// "gpt2"/"zrt-gpt2" or "bert"/"zrt-bert"; nullopt for anything else.
std::optional<ModelKind> model_kind(std::string_view name);
const char *model_kind_name(ModelKind kind);  // "GPT-2", "BERT"

struct MappedName {
  std::string name;
  bool transposed = false;  // a 2-D tensor stored the other way round there
};

/// The Hugging Face name of our tensor @p ours, nullopt if the table has none.
std::optional<MappedName> to_hf(ModelKind kind, std::string_view ours);
/// Our name for the Hugging Face tensor @p theirs, nullopt if it is none of the model's
/// parameters.
std::optional<MappedName> from_hf(ModelKind kind, std::string_view theirs);
/// Tensors of Hugging Face's files that are not parameters: GPT-2's attention-mask buffers
/// and the LM head tied to wte, BERT's position_ids and the decoder tied to the word
/// embeddings. They are skipped when read.
bool hf_not_a_parameter(ModelKind kind, std::string_view theirs);

/// A 2-D tensor the other way round: @p values of @p shape [a, b] as [b, a]; @p shape
/// becomes [b, a].
std::vector<float> transposed(const std::vector<float> &values, std::vector<int64_t> &shape);

}  // namespace weights
