// Where apps/data/prepare left the tokenizer and the corpora (the gpt2_data fixture runs
// it before the tests that need them and passes the folder in GPT2_DATA_CACHE).
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gpt2::test {

inline std::filesystem::path data_cache() {
  const char *dir = std::getenv("GPT2_DATA_CACHE");
  return dir ? std::filesystem::path(dir) : std::filesystem::path("apps/data/cache");
}

inline std::string read_bytes(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
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

}  // namespace gpt2::test
