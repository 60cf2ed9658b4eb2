#include "memory/borrowed_resource.hpp"

#include <cstring>

#include "memory/host_resource.hpp"
#include "runtime/error.hpp"
#include "runtime/format_bytes.hpp"

namespace zrt {

BorrowedResource::BorrowedResource(void *base, size_t bytes, std::string kind)
    : base_(static_cast<char *>(base)), bytes_(bytes), page_(page_size()), kind_(std::move(kind)) {
  if (base == nullptr || bytes == 0 || reinterpret_cast<uintptr_t>(base) % page_ != 0 ||
      bytes % page_ != 0)
    fail(ZRT_ERR_INTERNAL, "a borrowed range must be whole pages: {} bytes at {}", bytes, base);
}

void *BorrowedResource::reserve(size_t bytes) {
  if (reserved_) fail(ZRT_ERR_INTERNAL, "the borrowed range of {} is reserved already", kind_);
  if (bytes > bytes_)
    fail(ZRT_ERR_OUT_OF_MEMORY, "{} asked of a borrowed range ({}) of {}", format_bytes(bytes),
         kind_, format_bytes(bytes_));
  reserved_ = true;
  return base_;
}

void BorrowedResource::unreserve(void *base, size_t bytes) noexcept {
  (void)base, (void)bytes;
  reserved_ = false;
}

void BorrowedResource::commit(void *at, size_t bytes) {
  const char *p = static_cast<const char *>(at);
  if (p < base_ || p + bytes > base_ + bytes_)
    fail(ZRT_ERR_INTERNAL, "commit of {} bytes at {} outside the borrowed range of {}", bytes, at,
         kind_);
}

void BorrowedResource::move(void *dst, const void *src, size_t bytes) {
  std::memmove(dst, src, bytes);
}

}  // namespace zrt
