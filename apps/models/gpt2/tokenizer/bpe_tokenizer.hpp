// GPT-2's byte-level BPE tokenizer (OpenAI's encoder.py): the text is split into words
// (pretokenize.hpp), each word's UTF-8 bytes become byte tokens, and the merges of
// vocab.bpe are applied lowest rank first. Decoding concatenates the tokens' bytes, so
// encode followed by decode gives back the exact bytes of any input.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpt2 {

class BpeTokenizer {
 public:
  /// Loads GPT-2's encoder.json (token string -> id) and vocab.bpe (merges, rank order).
  /// Throws std::runtime_error naming the file and what is wrong with it.
  static BpeTokenizer load(const std::filesystem::path &encoder_json,
                           const std::filesystem::path &vocab_bpe);
  /// Loads encoder.json and vocab.bpe from @p dir.
  static BpeTokenizer load_dir(const std::filesystem::path &dir);

  /// Token ids of @p text. "<|endoftext|>" in the text is ordinary text, as in encoder.py;
  /// use eot() to separate documents. Not thread-safe (it caches encoded words).
  std::vector<int> encode(std::string_view text);
  /// The bytes of @p ids (not necessarily valid UTF-8 when a character is cut in two).
  /// Throws on an id outside the vocabulary.
  std::string decode(std::span<const int> ids) const;
  /// The bytes of one token.
  const std::string &token_bytes(int id) const;

  int vocab_size() const { return static_cast<int>(bytes_.size()); }
  /// The <|endoftext|> token (50256 in GPT-2), or -1 if the vocabulary has none.
  int eot() const { return eot_; }

 private:
  std::vector<int> bpe(std::string_view word) const;

  std::vector<std::string> bytes_;  // id -> raw bytes
  int byte_token_[256] = {};        // byte -> id of its single-byte token
  // (left id, right id) -> (merge rank, merged id)
  std::unordered_map<uint64_t, std::pair<int, int>> merges_;
  std::unordered_map<std::string, std::vector<int>> cache_;
  int eot_ = -1;
};

}  // namespace gpt2
