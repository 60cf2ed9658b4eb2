// zrt-ckpt export --format onnx. This file is built where the ONNX protobuf definitions
// are installed (apps/CMakeLists.txt); onnx_unavailable.cpp stands in elsewhere.
#include "onnx_export.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <stdexcept>

#include "bert_onnx.hpp"
#include "gpt2_onnx.hpp"
#include "onnx_graph.hpp"
#include "weights_file.hpp"

void export_onnx(const OnnxExport &e) {
  const std::string &path = e.checkpoint, &out = e.output;
  const nlohmann::json &m = e.model;
  const bool is_gpt2 = e.kind == weights::ModelKind::gpt2;
  bool external = e.external;
  const zonnx::Gpt2Shape gpt2{m.value("n_layer", 0), m.value("n_head", 0),
                              m.value("n_embd", int64_t{0}), m.value("vocab_size", int64_t{0}),
                              m.value("n_positions", int64_t{0})};
  const zonnx::BertShape bert{
      m.value("num_hidden_layers", 0),        m.value("num_attention_heads", 0),
      m.value("hidden_size", int64_t{0}),     m.value("intermediate_size", int64_t{0}),
      m.value("vocab_size", int64_t{0}),      m.value("max_position_embeddings", int64_t{0}),
      m.value("type_vocab_size", int64_t{0}), m.value("layer_norm_eps", 1e-12f)};
  weights::WeightsFile file(path);
  std::map<std::string, size_t> index;
  int64_t bytes = 0;
  for (size_t i = 0; i < file.tensors().size(); ++i) {
    index[file.tensors()[i].name] = i;
    int64_t n = 1;
    for (int64_t d : file.tensors()[i].shape)
      n *= d;
    bytes += 4 * n;
  }
  // Protobuf refuses messages past 2 GB: larger weights go to a side file.
  external = external || bytes > (int64_t{3} << 29);
  const std::filesystem::path target(out), partial(out + ".partial");
  const std::string side = target.filename().string() + ".data";
  try {
    zonnx::OnnxGraph graph(is_gpt2 ? "zerort_gpt2" : "zerort_bert", partial,
                           external ? side : std::string(), e.fp16);
    const zonnx::WeightReader read = [&](const std::string &name) {
      auto it = index.find(name);
      if (it == index.end())
        throw std::runtime_error(fmt::format("--format onnx: {} lacks the tensor {}", path, name));
      const size_t i = it->second;
      return zonnx::StoredWeight{file.tensors()[i].shape, [&file, i] { return file.read(i); }};
    };
    if (is_gpt2)
      zonnx::build_gpt2(graph, gpt2, read);
    else
      zonnx::build_bert(graph, bert, read);
    graph.write(partial);
    std::filesystem::rename(partial, target);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(partial, ignored);  // the graph removed its side file
    throw;
  }
  const std::string where = fmt::format("{}{}", e.fp16 ? ", fp16 weights" : "",
                                        external ? fmt::format(", weights in {}", side) : "");
  if (is_gpt2)
    fmt::print(
        "{}: GPT-2 ({} layers, {} heads, {} channels) as ONNX opset 17{}: input_ids "
        "[batch, seq] -> logits [batch, seq, {}]\n",
        out, gpt2.layers, gpt2.heads, gpt2.channels, where, gpt2.vocab);
  else
    fmt::print(
        "{}: BERT ({} layers, hidden {}, {} heads) as ONNX opset 17{}: input_ids, "
        "token_type_ids, attention_mask [batch, seq] -> mlm_logits [batch, seq, {}], "
        "nsp_logits [batch, 2], pooled_output [batch, {}]\n",
        out, bert.layers, bert.hidden, bert.heads, where, bert.vocab, bert.hidden);
}
