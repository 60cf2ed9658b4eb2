// Opening a file that an app reads without blocking. open(2) of a FIFO for reading waits for
// ever for a writer, and a directory or a device opens fine and fails (or blocks) only when
// read, so every path is opened with O_NONBLOCK, checked to be a regular file with fstat, and
// only then made blocking again; what is not a regular file is named ("it is a FIFO (named
// pipe), not a regular file"). zerort's own files go through runtime/regular_file.hpp, which
// does the same; apps use only the public headers, so they have this one.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace files {

/// Why a file could not be opened or read: what() is "PATH: REASON", REASON the system's
/// words ("No such file or directory", "Permission denied") or what the path is instead of
/// a regular file (a directory, a FIFO, a character or block device, a socket).
class Error : public std::runtime_error {
 public:
  Error(const std::filesystem::path &path, const std::string &reason);
  const std::string &reason() const { return reason_; }

 private:
  std::string reason_;
};

/// Opens @p path for reading (O_RDONLY | O_CLOEXEC) without blocking; returns the
/// descriptor, in blocking mode, which the caller closes. Throws Error.
int open_regular(const std::filesystem::path &path);

/// The whole file, opened as open_regular does. Throws Error.
std::string read_regular(const std::filesystem::path &path);

}  // namespace files
