#include "files/output_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace files {

OutputFile::OutputFile(const std::filesystem::path &path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) throw Error(path, fmt::format("cannot create: {}", std::strerror(errno)));
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void OutputFile::write(const void *bytes, size_t size) {
  const char *p = static_cast<const char *>(bytes);
  while (size > 0) {
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(path_, fmt::format("cannot write: {}", std::strerror(errno)));
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void OutputFile::close() {
  const int fd = fd_;
  fd_ = -1;
  if (fd >= 0 && ::close(fd) != 0)
    throw Error(path_, fmt::format("cannot write: {}", std::strerror(errno)));
}

}  // namespace files
