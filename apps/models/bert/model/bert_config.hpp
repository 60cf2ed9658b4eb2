// BERT's shape: layers, hidden size, heads, MLP width, vocabulary, positions and segment
// types, by name (bert-tiny ... bert-large, Google's released sizes) or from a JSON file
// with Hugging Face's BertConfig keys (a config.json from the Hub works as it is).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace bert {

struct BertConfig {
  std::string name;
  int num_layers = 12;            // L        num_hidden_layers
  int hidden = 768;               // H        hidden_size
  int num_heads = 12;             // A        num_attention_heads
  int intermediate = 3072;        // I        intermediate_size (4H in every preset)
  int vocab_size = 30522;         // V        vocab_size (Google's uncased WordPiece)
  int max_positions = 512;        // P        max_position_embeddings
  int type_vocab_size = 2;        //          type_vocab_size: segments A and B
  double layer_norm_eps = 1e-12;  //          layer_norm_eps
  /// Keys of a JSON config that describe what zrt-bert does not do (dropout, say), with
  /// their values: the program prints them so nothing is dropped silently.
  std::vector<std::string> not_used;

  int head_size() const { return hidden / num_heads; }
  /// Throws std::invalid_argument naming the first field out of range.
  void validate() const;
  /// Parameters in the model (the MLM decoder is tied to the word embeddings).
  int64_t num_parameters() const;
  nlohmann::json to_json() const;

  /// bert-tiny (L2 H128 A2), bert-mini (4/256/4), bert-small (4/512/8),
  /// bert-medium (8/512/8), bert-base (12/768/12), bert-large (24/1024/16).
  /// Throws std::invalid_argument listing the names it knows.
  static BertConfig preset(const std::string &name);
  /// A JSON object with BertConfig's keys (hidden_size, num_hidden_layers,
  /// num_attention_heads, intermediate_size, vocab_size, max_position_embeddings,
  /// type_vocab_size, layer_norm_eps, hidden_act "gelu", ...); "base": "NAME" starts from a
  /// preset and the other keys override it.
  static BertConfig from_json(const nlohmann::json &j, const std::string &name);
  static BertConfig from_json_file(const std::filesystem::path &file);
  /// A preset name, or a path to a .json file.
  static BertConfig from_name_or_file(const std::string &spec);
};

}  // namespace bert
