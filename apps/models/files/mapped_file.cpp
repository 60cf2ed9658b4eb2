#include "files/mapped_file.hpp"

#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "files/regular_file.hpp"

namespace files {

void fail_file(std::string_view kind, const std::filesystem::path &path, std::string_view what) {
  throw std::runtime_error(fmt::format("{} {}: {}", kind, path.string(), what));
}

MappedFile::MappedFile(std::filesystem::path path, std::string kind, std::string_view open_hint)
    : path_(std::move(path)), kind_(std::move(kind)) {
  int fd = -1;
  try {
    fd = open_regular(path_);  // a FIFO would block open(2) for ever
  } catch (const Error &e) {
    fail(fmt::format("cannot open: {} ({})", e.reason(), open_hint));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail(fmt::format("cannot read its size: {}", std::strerror(err)));
  }
  const size_t bytes = static_cast<size_t>(st.st_size);
  if (bytes > 0) {
    void *map = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      fail(fmt::format("cannot map: {}", std::strerror(err)));
    }
    data_ = static_cast<const unsigned char *>(map);
    size_ = bytes;
  }
  ::close(fd);  // the mapping stays
}

MappedFile::MappedFile(MappedFile &&other) noexcept {
  *this = std::move(other);
}

MappedFile &MappedFile::operator=(MappedFile &&other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    kind_ = std::move(other.kind_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  unmap();
}

void MappedFile::unmap() {
  if (data_) ::munmap(const_cast<unsigned char *>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

void MappedFile::fail(std::string_view what) const {
  fail_file(kind_, path_, what);
}

}  // namespace files
