// BERT's uncased WordPiece tokenizer (Google's FullTokenizer with do_lower_case=True): the
// basic tokenizer's words, each split greedily into the longest vocabulary pieces from the
// left, continuation pieces spelled "##piece"; a word that cannot be split, or is longer
// than 100 code points, becomes [UNK].
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocabulary.hpp"

namespace bert {

/// The tokenizer: a vocabulary and the rules above. Const methods are thread-safe.
class WordPieceTokenizer {
 public:
  /// Google's max_input_chars_per_word: longer words are [UNK] without being looked at.
  static constexpr size_t kMaxInputCharsPerWord = 100;

  /// Loads the vocabulary (vocab.txt form, see Vocabulary::load). Throws
  /// std::runtime_error naming the file and the reason.
  static WordPieceTokenizer load(const std::filesystem::path &vocab_txt);
  /// A tokenizer over @p vocab (for tests: Vocabulary::from_tokens).
  explicit WordPieceTokenizer(Vocabulary vocab);

  /// Token ids of @p text (UTF-8), without [CLS]/[SEP]. Invalid UTF-8 bytes are dropped and
  /// counted in @p dropped when given. Text such as "[MASK]" is ordinary text (three words),
  /// as in Google's tokenizer. Const and thread-safe.
  std::vector<int32_t> encode(std::string_view text, size_t *dropped = nullptr) const;
  /// Appends the ids of @p text to @p out (encode without a new vector).
  void encode_append(std::string_view text, std::vector<int32_t> &out,
                     size_t *dropped = nullptr) const;
  /// The pieces of @p text as strings ("un", "##aff", "##able"), for tests and tools.
  std::vector<std::string> pieces(std::string_view text) const;

  /// The vocabulary: special ids, size, checksum.
  const Vocabulary &vocab() const { return vocab_; }

 private:
  void wordpiece(const std::u32string &word, std::vector<int32_t> &out) const;

  Vocabulary vocab_;
  size_t longest_piece_ = 0;  // code points of the longest piece, "##" not counted
};

}  // namespace bert
