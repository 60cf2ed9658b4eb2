#include "token_file.hpp"

#include "data/data_location.hpp"
#include "files/output_file.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>
#include <vector>

namespace gpt2 {
namespace {

constexpr const char *kKind = "token file";

[[noreturn]] void fail(const std::filesystem::path &path, const std::string &what) {
  files::fail_file(kKind, path, what);
}

}  // namespace

TokenFormat parse_token_format(const std::string &name) {
  if (name == "auto") return TokenFormat::automatic;
  if (name == "llmc") return TokenFormat::llmc;
  if (name == "raw") return TokenFormat::raw;
  throw std::invalid_argument(
      fmt::format("unknown token file format '{}': expected auto, llmc or raw", name));
}

const char *token_format_name(TokenFormat format) {
  switch (format) {
    case TokenFormat::automatic:
      return "auto";
    case TokenFormat::llmc:
      return "llmc";
    case TokenFormat::raw:
      return "raw";
  }
  return "?";
}

namespace {

// The first 4 KiB are all printable ASCII, tabs and line ends, or UTF-8 lead and
// continuation bytes: a text file. Token ids below 50257 fill both bytes of a uint16 with
// values that rarely stay printable for long.
bool looks_like_text(const unsigned char *base, size_t bytes) {
  const size_t n = std::min<size_t>(bytes, 4096);
  if (n < 64) return false;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = base[i];
    const bool printable =
        (c >= 0x20 && c < 0x7f) || c == '\n' || c == '\r' || c == '\t' || c >= 0x80;
    if (!printable) return false;
  }
  return true;
}

}  // namespace

TokenFile TokenFile::open(const std::filesystem::path &path, TokenFormat format, int vocab_size) {
  TokenFile f;
  f.file_ = files::MappedFile(
      path, kKind,
      fmt::format("run {}, or pass --data DIR with train.bin and val.bin", prepare_command()));
  const size_t bytes = f.file_.bytes().size();
  const unsigned char *base = f.file_.bytes().data();
  int32_t header[kHeaderInts] = {};
  const size_t header_bytes = sizeof(header);
  if (bytes >= sizeof(int32_t)) std::memcpy(header, base, std::min(bytes, header_bytes));
  if (format == TokenFormat::automatic) {
    format = bytes >= sizeof(int32_t) && header[0] == kMagic ? TokenFormat::llmc : TokenFormat::raw;
    // Raw tokens only when the file cannot be an llm.c file or a text file: a damaged
    // magic number would otherwise train on the header, and a text file on its characters.
    if (format == TokenFormat::raw) {
      if (bytes >= header_bytes && header[2] >= 0 &&
          bytes == header_bytes + sizeof(uint16_t) * static_cast<size_t>(header[2]))
        fail(path, fmt::format("bad magic number {} in an llm.c header (llm.c token files begin "
                               "with {}; the token count {} matches the file's size); "
                               "--data-format raw reads it as raw tokens all the same",
                               header[0], kMagic, header[2]));
      if (looks_like_text(base, bytes))
        fail(path,
             "looks like text, not tokens (every byte of its beginning is printable): "
             "zrt-tokenize --tokenizer DIR encode --out-dir OUT FILE makes token files "
             "from text; --data-format raw reads it as raw tokens all the same");
    }
  }
  f.format_ = format;

  size_t data_offset = 0;
  if (format == TokenFormat::llmc) {
    if (bytes < header_bytes)
      fail(path,
           fmt::format("{} bytes is shorter than llm.c's {}-byte header", bytes, header_bytes));
    if (header[0] != kMagic)
      fail(path, fmt::format("bad magic number {} in the header (llm.c token files begin with "
                             "{})",
                             header[0], kMagic));
    if (header[1] != 1)
      fail(path,
           fmt::format("header version {} is not supported: version 1 holds uint16 GPT-2 "
                       "tokens{}",
                       header[1], header[1] == 2 ? " (version 2 is llm.c's uint32 format)" : ""));
    if (header[2] < 0) fail(path, fmt::format("negative token count {} in the header", header[2]));
    const size_t want = header_bytes + sizeof(uint16_t) * static_cast<size_t>(header[2]);
    if (bytes != want)
      fail(path, fmt::format("the header announces {} tokens ({} bytes with the header) but the "
                             "file has {} bytes",
                             header[2], want, bytes));
    data_offset = header_bytes;
  } else if (bytes % sizeof(uint16_t) != 0) {
    fail(path, fmt::format("{} bytes is not a whole number of uint16 tokens", bytes));
  }
  f.count_ = (bytes - data_offset) / sizeof(uint16_t);
  if (f.count_ == 0) fail(path, "holds no tokens");
  f.tokens_ = reinterpret_cast<const uint16_t *>(base + data_offset);

  for (size_t i = 0; i < f.count_; ++i)
    if (f.tokens_[i] >= vocab_size)
      fail(path, fmt::format("token {} at position {} is outside the model's vocabulary of {}",
                             f.tokens_[i], i, vocab_size));
  return f;
}

void write_token_file(const std::filesystem::path &path, std::span<const uint16_t> tokens,
                      TokenFormat format) {
  if (format == TokenFormat::automatic)
    throw std::invalid_argument("write_token_file: choose llmc or raw");
  if (format == TokenFormat::llmc && tokens.size() > static_cast<size_t>(INT32_MAX))
    fail(path, fmt::format("{} tokens do not fit llm.c's int32 count", tokens.size()));
  try {
    files::write_replacing(path, [&](files::OutputFile &out) {
      if (format == TokenFormat::llmc) {
        int32_t header[TokenFile::kHeaderInts] = {};
        header[0] = TokenFile::kMagic;
        header[1] = 1;
        header[2] = static_cast<int32_t>(tokens.size());
        out.write(header, sizeof(header));
      }
      out.write(tokens.data(), tokens.size_bytes());
    });
  } catch (const files::Error &e) {
    fail(path, e.reason());
  }
}

}  // namespace gpt2
