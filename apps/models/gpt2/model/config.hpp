// GPT-2's shape: layers, heads, channels, vocabulary and context length, by name
// (gpt2, gpt2-medium, gpt2-large, gpt2-xl, dN) or from a JSON file (Hugging Face's
// config.json keys: n_layer, n_head, n_embd, vocab_size, n_positions).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace gpt2 {

struct Gpt2Config {
  std::string name;
  int num_layers = 12;     // L
  int num_heads = 12;      // NH
  int channels = 768;      // C
  int vocab_size = 50257;  // V
  int max_seq_len = 1024;  // maxT: rows of the position embedding

  int head_size() const { return channels / num_heads; }
  /// Throws std::invalid_argument naming the first field that is out of range (heads that
  /// do not divide the channels, a vocabulary beyond 16-bit token ids, ...).
  void validate() const;
  /// Parameters in the model (the LM head is tied to wte, so counted once).
  int64_t num_parameters() const;
  nlohmann::json to_json() const;

  /// gpt2 (124M), gpt2-medium (350M), gpt2-large (774M), gpt2-xl (1558M), or dN: N layers
  /// of 64*N channels in N heads of 64 (d12 = gpt2, d6 is llm.c's 30M "tiny", d2 the
  /// smallest useful). Throws std::invalid_argument listing the names it knows.
  static Gpt2Config preset(const std::string &name);
  /// A JSON object: n_layer, n_head, n_embd, and optionally vocab_size and n_positions
  /// (or n_ctx); "base": "NAME" starts from a preset and the other keys override it.
  static Gpt2Config from_json(const nlohmann::json &j, const std::string &name);
  static Gpt2Config from_json_file(const std::filesystem::path &file);
  /// A preset name, or a path to a .json file.
  static Gpt2Config from_name_or_file(const std::string &spec);
};

}  // namespace gpt2
