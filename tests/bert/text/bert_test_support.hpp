// What the BERT text tests share: where apps/data/prepare left the data (the bert_data
// fixture passes the folder in BERT_DATA_CACHE), a scratch folder, a small vocabulary.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/vocabulary.hpp"

namespace bert::test {

inline std::filesystem::path data_cache() {
  const char *dir = std::getenv("BERT_DATA_CACHE");
  return dir ? std::filesystem::path(dir) : std::filesystem::path("apps/data/cache");
}

inline std::string read_bytes(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_bytes(const std::filesystem::path &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// A scratch folder for one test program, removed at the end.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string &tag)
      : path_(std::filesystem::temp_directory_path() / (tag + "_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path &path() const { return path_; }
  std::filesystem::path operator/(const std::string &name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

/// The tokens of a small vocabulary in vocab.txt order: the specials at Google's ids 0 and
/// 100-103 ([unusedN] between), then a few words and pieces.
inline std::vector<std::string> small_vocab_tokens() {
  std::vector<std::string> t = {"[PAD]"};
  for (int i = 1; i < 100; ++i)
    t.push_back("[unused" + std::to_string(i - 1) + "]");
  for (const char *s :
       {"[UNK]", "[CLS]",     "[SEP]", "[MASK]", "hello", "world", "un",  "##aff", "##able",
        ",",     "!",         ".",     "a",      "##b",   "##c",   "中",  "文",    "cafe",
        "naive", "x",         "##x",   "ο",      "##δ",   "##ος",  "##ς", "σ",     "##σ",
        "i",     "##stanbul", "'",     "s",      "the",   "whale", "##s", "call",  "me",
        "ish",   "##mael",    "-",     "$",      "5",     "e",     "##e"})
    t.push_back(s);
  return t;
}

inline Vocabulary small_vocab() {
  return Vocabulary::from_tokens(small_vocab_tokens(), "small test vocabulary");
}

/// The message of @p f's std::runtime_error (or "no error").
template <typename F>
std::string error_of(F &&f) {
  try {
    f();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "no error";
}

}  // namespace bert::test
