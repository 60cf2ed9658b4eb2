#include "memory/host_resource.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/error.hpp"
#include "runtime/format_bytes.hpp"

namespace zrt {

size_t page_size() {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? static_cast<size_t>(p) : 4096;
}

size_t physical_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  return pages > 0 ? static_cast<size_t>(pages) * page_size() : size_t{1} << 34;
}

HostResource::HostResource() : page_(page_size()) {}

void *HostResource::reserve(size_t bytes) {
  // MAP_NORESERVE: no swap or overcommit charge until a segment is committed.
  void *p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    // The usual cause: a limit set by hand above what ulimit -v leaves.
    struct rlimit as {};
    const std::string limit = getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY
                                  ? fmt::format(" (RLIMIT_AS, ulimit -v, is {})",
                                                format_bytes(static_cast<size_t>(as.rlim_cur)))
                                  : "";
    fail(ZRT_ERR_OUT_OF_MEMORY, "cannot reserve {} of address space: mmap: {}{}",
         format_bytes(bytes), std::strerror(err), limit);
  }
  return p;
}

void HostResource::unreserve(void *base, size_t bytes) noexcept {
  munmap(base, bytes);
}

void HostResource::commit(void *at, size_t bytes) {
  void *p = mmap(at, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED)
    fail(ZRT_ERR_OUT_OF_MEMORY, "cannot commit {} of host memory: mmap: {}", format_bytes(bytes),
         std::strerror(errno));
}

void HostResource::decommit(void *at, size_t bytes) noexcept {
  // A fresh PROT_NONE mapping over the range drops its pages and keeps the reservation.
  mmap(at, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

void HostResource::move(void *dst, const void *src, size_t bytes) {
  std::memmove(dst, src, bytes);
}

}  // namespace zrt
