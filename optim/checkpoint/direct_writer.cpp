#include "optim/checkpoint/direct_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace zrt::checkpoint {

namespace {

// A piece of an unaligned source copied at a time: large enough for writes at the device's
// speed, small enough to stay in cache between the copy and the write.
constexpr size_t kBounceBytes = size_t{1} << 20;

void pwrite_fully(int fd, const char *p, size_t bytes, uint64_t offset) {
  while (bytes > 0) {
    ssize_t w = ::pwrite(fd, p, bytes, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw w == 0 ? EIO : errno;
    p += w;
    bytes -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
}

bool aligned(uint64_t v) {
  return v % DirectWriter::kAlignment == 0;
}

}  // namespace

void DirectWriter::FreeAligned::operator()(char *p) const {
  std::free(p);
}

DirectWriter::DirectWriter(const std::string &path, bool direct) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd_ < 0) throw errno;
  if (direct) direct_fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_DIRECT);
}

DirectWriter::~DirectWriter() {
  close();
}

void DirectWriter::write(const void *data, size_t bytes, uint64_t offset) {
  const char *p = static_cast<const char *>(data);
  if (direct_fd_ < 0 || bytes < kAlignment) {
    write_buffered(p, bytes, offset);
    return;
  }
  // [offset, end): the head up to the first aligned offset and the tail after the last go
  // through the page cache; the whole pages between go direct. With bytes >= a page,
  // offset <= mid <= mid_end <= end.
  const uint64_t end = offset + bytes;
  const uint64_t mid = (offset + kAlignment - 1) / kAlignment * kAlignment,
                 mid_end = end / kAlignment * kAlignment;
  if (mid > offset) write_buffered(p, static_cast<size_t>(mid - offset), offset);
  if (mid_end > mid) write_direct(p + (mid - offset), static_cast<size_t>(mid_end - mid), mid);
  if (end > mid_end)
    write_buffered(p + (mid_end - offset), static_cast<size_t>(end - mid_end), mid_end);
}

void DirectWriter::write_buffered(const char *data, size_t bytes, uint64_t offset) {
  pwrite_fully(fd_, data, bytes, offset);
  buffered_bytes_ += bytes;
}

void DirectWriter::write_direct(const char *data, size_t bytes, uint64_t offset) {
  try {
    if (aligned(reinterpret_cast<uintptr_t>(data))) {
      pwrite_fully(direct_fd_, data, bytes, offset);
    } else {
      if (!bounce_) {
        void *b = nullptr;
        if (::posix_memalign(&b, kAlignment, kBounceBytes) != 0) throw ENOMEM;
        bounce_.reset(static_cast<char *>(b));
      }
      for (size_t done = 0; done < bytes; done += kBounceBytes) {
        const size_t n = std::min(kBounceBytes, bytes - done);
        std::memcpy(bounce_.get(), data + done, n);
        pwrite_fully(direct_fd_, bounce_.get(), n, offset + done);
      }
    }
    direct_bytes_ += bytes;
  } catch (int err) {
    // Refused for its alignment or kind after the open took it (some network and FUSE
    // file systems): the page cache takes this write and the rest. A partly written range
    // is simply written again.
    if (err != EINVAL) throw;
    ::close(direct_fd_);
    direct_fd_ = -1;
    write_buffered(data, bytes, offset);
  }
}

void DirectWriter::finish() {
  if (::fsync(fd_) != 0) throw errno;
  close();
}

void DirectWriter::close() noexcept {
  if (direct_fd_ >= 0) ::close(direct_fd_);
  if (fd_ >= 0) ::close(fd_);
  direct_fd_ = fd_ = -1;
}

}  // namespace zrt::checkpoint
