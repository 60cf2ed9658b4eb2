#include "files/output_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
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

void write_replacing(const std::filesystem::path &path,
                     const std::function<void(OutputFile &)> &write) {
  std::filesystem::path tmp = path;
  tmp += fmt::format(".tmp{}", ::getpid());
  try {
    OutputFile out(tmp);
    write(out);
    out.close();
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      throw Error(tmp, fmt::format("cannot rename to {}: {}", path.string(), std::strerror(errno)));
  } catch (const Error &) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);  // a full disk leaves no partial file
    throw;
  }
}

}  // namespace files
