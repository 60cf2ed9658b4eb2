#include "files/regular_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace files {

namespace {

// What a file of this mode is, when it is not a regular file.
std::string not_regular(mode_t mode) {
  const char *kind = S_ISDIR(mode)    ? "a directory"
                     : S_ISFIFO(mode) ? "a FIFO (named pipe)"
                     : S_ISCHR(mode)  ? "a character device"
                     : S_ISBLK(mode)  ? "a block device"
                     : S_ISSOCK(mode) ? "a socket"
                                      : "not a file";
  return fmt::format("it is {}, not a regular file", kind);
}

}  // namespace

Error::Error(const std::filesystem::path &path, const std::string &reason)
    : std::runtime_error(fmt::format("{}: {}", path.string(), reason)), reason_(reason) {}

int open_regular(const std::filesystem::path &path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st {};
  if (fd < 0) {
    const int err = errno;
    // A socket refuses open (ENXIO, "No such device or address"): say what it is.
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      throw Error(path, not_regular(st.st_mode));
    throw Error(path, std::strerror(err));
  }
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error(path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path, not_regular(st.st_mode));
  }
  // Reads of a regular file never wait on O_NONBLOCK anyway; cleared so that whoever reads
  // the descriptor sees an ordinary one.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error(path, std::strerror(err));
  }
  return fd;
}

std::string read_regular(const std::filesystem::path &path) {
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } file{open_regular(path)};
  std::string text;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(file.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(path, fmt::format("cannot read: {}", std::strerror(errno)));
    if (n == 0) return text;
    text.append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace files
