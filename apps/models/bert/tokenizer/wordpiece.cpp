#include "tokenizer/wordpiece.hpp"

#include <algorithm>

#include "tokenizer/basic_tokenizer.hpp"
#include "tokenizer/utf8.hpp"

namespace bert {
namespace {

size_t code_points(std::string_view utf8) {
  size_t n = 0;
  for (unsigned char c : utf8)
    n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

WordPieceTokenizer WordPieceTokenizer::load(const std::filesystem::path &vocab_txt) {
  return WordPieceTokenizer(Vocabulary::load(vocab_txt));
}

WordPieceTokenizer::WordPieceTokenizer(Vocabulary vocab) : vocab_(std::move(vocab)) {
  for (int32_t id = 0; id < vocab_.size(); ++id) {
    std::string_view t = vocab_.token(id);
    if (t.starts_with("##")) t.remove_prefix(2);
    longest_piece_ = std::max(longest_piece_, code_points(t));
  }
}

void WordPieceTokenizer::wordpiece(const std::u32string &word, std::vector<int32_t> &out) const {
  if (word.size() > kMaxInputCharsPerWord) {
    out.push_back(vocab_.unk_id());
    return;
  }
  // UTF-8 of the word with the byte offset of every code point, so pieces are substrings.
  std::string bytes;
  std::vector<size_t> offset;
  offset.reserve(word.size() + 1);
  for (char32_t cp : word) {
    offset.push_back(bytes.size());
    utf8_append(bytes, cp);
  }
  offset.push_back(bytes.size());

  const size_t first = out.size();
  std::string key;
  size_t start = 0;
  while (start < word.size()) {
    // A piece longer than the vocabulary's longest cannot match: start below it.
    size_t end = std::min(word.size(), start + longest_piece_);
    int32_t id = -1;
    for (; end > start; --end) {
      key.assign(start > 0 ? "##" : "");
      key.append(bytes, offset[start], offset[end] - offset[start]);
      id = vocab_.find(key);
      if (id >= 0) break;
    }
    if (id < 0) {
      // One unmatchable rest makes the whole word unknown, as in Google's code.
      out.resize(first);
      out.push_back(vocab_.unk_id());
      return;
    }
    out.push_back(id);
    start = end;
  }
}

void WordPieceTokenizer::encode_append(std::string_view text, std::vector<int32_t> &out,
                                       size_t *dropped) const {
  for (const std::u32string &word : basic_tokenize(text, dropped))
    wordpiece(word, out);
}

std::vector<int32_t> WordPieceTokenizer::encode(std::string_view text, size_t *dropped) const {
  std::vector<int32_t> ids;
  encode_append(text, ids, dropped);
  return ids;
}

std::vector<std::string> WordPieceTokenizer::pieces(std::string_view text) const {
  std::vector<std::string> out;
  for (int32_t id : encode(text))
    out.push_back(vocab_.token(id));
  return out;
}

}  // namespace bert
