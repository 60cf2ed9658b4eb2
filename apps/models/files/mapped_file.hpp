// A binary input file of an app mapped read-only into memory (GPT-2's token files, BERT's
// example files), so datasets larger than memory work. It is opened as open_regular opens
// (a FIFO would block for ever) and mapped whole; every failure, the mapping's and the
// format's checks the owner makes over its bytes, reads "KIND PATH: what".
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace files {

/// Throws std::runtime_error("KIND PATH: WHAT"): how a mapped file's owner refuses it.
[[noreturn]] void fail_file(std::string_view kind, const std::filesystem::path &path,
                            std::string_view what);

/// A whole file mapped read-only. Movable, not copyable; the bytes stay where they are
/// when it moves. Accessors are const and thread-safe.
class MappedFile {
 public:
  /// Nothing mapped.
  MappedFile() = default;
  /// Opens and maps @p path (an empty file maps to no bytes). @p kind names such files in
  /// messages ("token file"); @p open_hint follows the reason an open failed, in
  /// parentheses (where such files come from). Throws std::runtime_error:
  /// "KIND PATH: cannot open: REASON (OPEN_HINT)", "... cannot read its size: ...",
  /// "... cannot map: ...".
  MappedFile(std::filesystem::path path, std::string kind, std::string_view open_hint);

  MappedFile(MappedFile &&other) noexcept;
  MappedFile &operator=(MappedFile &&other) noexcept;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile();

  /// The file's bytes (empty for an empty file).
  std::span<const unsigned char> bytes() const { return {data_, size_}; }
  const std::filesystem::path &path() const { return path_; }
  /// fail_file with this file's kind and path.
  [[noreturn]] void fail(std::string_view what) const;

 private:
  void unmap();

  std::filesystem::path path_;
  std::string kind_;
  const unsigned char *data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace files
