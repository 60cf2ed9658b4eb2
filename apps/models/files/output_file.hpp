// A file an app writes (an export), every failure reported with the system's reason ("No
// space left on device", "File too large", "Disk quota exceeded"): a std::ofstream keeps
// only "failed", and errno is gone by the time anyone asks. The caller decides the name
// (exports write PATH.partial and rename it when complete) and removes it on failure.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>

#include "files/regular_file.hpp"

namespace files {

class OutputFile {
 public:
  /// Creates or truncates @p path (O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode 0666
  /// under the umask). Throws Error "PATH: cannot create: REASON".
  explicit OutputFile(const std::filesystem::path &path);
  /// Closes the file if close() was not called (no error reported: the write that failed
  /// already threw).
  ~OutputFile();
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;

  /// Writes all @p size bytes at the end of what was written. Throws Error "PATH: cannot
  /// write: REASON".
  void write(const void *bytes, size_t size);
  /// Closes the file; a write the file system reports only now (NFS, quotas) throws Error
  /// "PATH: cannot write: REASON".
  void close();

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

/// Writes @p path whole or not at all: @p write fills a temporary file beside it
/// (PATH.tmpPID) through the OutputFile it is given, which replaces @p path once every byte
/// went out and it closed. On an Error (a full disk, a quota, a size limit) the temporary
/// file is removed and the Error rethrown, naming it.
void write_replacing(const std::filesystem::path &path,
                     const std::function<void(OutputFile &)> &write);

}  // namespace files
