// Token files: GPT-2 token ids as uint16, in either of the two formats in common use:
//   llm.c   a header of 256 int32 (magic 20240520, version 1, token count), then the
//           tokens (llm.c's dev/data scripts write these)
//   raw     the tokens alone (nanoGPT's prepare.py writes train.bin / val.bin so)
// The file is memory-mapped, so datasets larger than memory work. Little-endian only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "files/mapped_file.hpp"

namespace gpt2 {

enum class TokenFormat { automatic, llmc, raw };

/// "auto", "llmc" or "raw"; throws std::invalid_argument otherwise.
TokenFormat parse_token_format(const std::string &name);
const char *token_format_name(TokenFormat format);

class TokenFile {
 public:
  static constexpr int32_t kMagic = 20240520;
  static constexpr int kHeaderInts = 256;

  /// Opens and checks @p path: the header (automatic picks llm.c when the file begins with
  /// its magic number, raw otherwise), the size, and that every id is below @p vocab_size.
  /// Throws std::runtime_error naming the file and the problem.
  static TokenFile open(const std::filesystem::path &path, TokenFormat format, int vocab_size);

  TokenFile(TokenFile &&other) noexcept = default;
  TokenFile &operator=(TokenFile &&other) noexcept = default;

  std::span<const uint16_t> tokens() const { return {tokens_, count_}; }
  size_t size() const { return count_; }
  TokenFormat format() const { return format_; }
  const std::filesystem::path &path() const { return file_.path(); }

 private:
  TokenFile() = default;

  files::MappedFile file_;
  TokenFormat format_ = TokenFormat::raw;
  const uint16_t *tokens_ = nullptr;  // in file_'s bytes
  size_t count_ = 0;
};

/// Writes @p tokens to @p path in @p format (llmc or raw), through a temporary file renamed
/// into place, so a failed write never leaves a truncated file under the final name.
void write_token_file(const std::filesystem::path &path, std::span<const uint16_t> tokens,
                      TokenFormat format);

}  // namespace gpt2
