// BERT's vocabulary in Google's vocab.txt form: one token per line, the line number (from
// 0) is its id; word-initial pieces as they are, continuation pieces with "##", special
// tokens in brackets ([PAD], [UNK], [CLS], [SEP], [MASK]).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace bert {

/// A checked vocabulary: id <-> token, and the ids of the special tokens. Const methods
/// are thread-safe.
class Vocabulary {
 public:
  /// Reads and checks @p path: every line a token (no empty lines, no spaces inside, each
  /// token once), the five special tokens present, fewer than 65536 tokens (ids are stored
  /// as uint16). Throws std::runtime_error naming the file and the reason.
  static Vocabulary load(const std::filesystem::path &path);

  /// Builds a vocabulary from @p tokens (id = position), checked as load() checks a file;
  /// @p origin names it in errors. For tests and tools.
  static Vocabulary from_tokens(std::vector<std::string> tokens, const std::string &origin);

  // Movable, not copyable: the lookup table points into the token strings.
  Vocabulary(Vocabulary &&) noexcept = default;
  Vocabulary &operator=(Vocabulary &&) noexcept = default;
  Vocabulary(const Vocabulary &) = delete;
  Vocabulary &operator=(const Vocabulary &) = delete;

  /// The id of @p token, or -1 when it is not in the vocabulary.
  int32_t find(std::string_view token) const;
  /// The token of @p id; throws std::out_of_range outside [0, size()).
  const std::string &token(int32_t id) const;
  /// Tokens in the vocabulary (30522 for Google's uncased one).
  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }

  /// Ids of [PAD], [UNK], [CLS], [SEP] and [MASK] (0, 100, 101, 102, 103 in Google's).
  int32_t pad_id() const { return pad_; }
  int32_t unk_id() const { return unk_; }
  int32_t cls_id() const { return cls_; }
  int32_t sep_id() const { return sep_; }
  int32_t mask_id() const { return mask_; }

  /// XXH3-64 of the tokens, each followed by "\n" (the file's bytes when it ends in a line
  /// feed): example files record it so that a file made with another vocabulary is refused.
  uint64_t checksum() const { return checksum_; }
  /// Where the vocabulary came from (the file name), for messages.
  const std::string &origin() const { return origin_; }

 private:
  Vocabulary() = default;

  std::vector<std::string> tokens_;
  // Keys view the strings in tokens_, which never change after construction.
  std::unordered_map<std::string_view, int32_t> ids_;
  int32_t pad_ = -1, unk_ = -1, cls_ = -1, sep_ = -1, mask_ = -1;
  uint64_t checksum_ = 0;
  std::string origin_;
};

}  // namespace bert
