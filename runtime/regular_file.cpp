#include "runtime/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/error.hpp"

namespace zrt {

namespace {

// What a file of this mode is, when it is not a regular file ("" when it is).
const char *kind_of(mode_t mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

}  // namespace

int open_regular_file(const std::string &path, const char *what, zrt_status_t status) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st {};
  if (fd < 0) {
    const int err = errno;
    // A socket refuses open (ENXIO, "No such device or address"): say what it is.
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      fail(status, "cannot open {} {}: it is {}, not a regular file", what, path,
           kind_of(st.st_mode));
    fail(status, "cannot open {} {}: {}", what, path, std::strerror(err));
  }
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail(status, "cannot open {} {}: {}", what, path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(status, "cannot open {} {}: it is {}, not a regular file", what, path,
         kind_of(st.st_mode));
  }
  // Reads of a regular file never wait on O_NONBLOCK anyway; cleared so that whoever reads
  // the descriptor sees an ordinary one.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    fail(status, "cannot open {} {}: {}", what, path, std::strerror(err));
  }
  return fd;
}

void check_regular_file(const std::string &path, const char *what, zrt_status_t status) {
  ::close(open_regular_file(path, what, status));
}

std::string read_regular_file(const std::string &path, const char *what, zrt_status_t status) {
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } file{open_regular_file(path, what, status)};
  std::string text;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(file.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(status, "cannot read {} {}: {}", what, path, std::strerror(errno));
    if (n == 0) return text;
    text.append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace zrt
