// An owned, 64-byte aligned, zero-initialized host allocation for the engine's long-lived
// state. (The memory layer's pool takes this over; the engine only needs data and size.)
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace zrt {

class HostBuffer {
 public:
  HostBuffer() = default;
  // zeroed = false skips the memset, for buffers that are entirely overwritten first.
  explicit HostBuffer(size_t bytes, bool zeroed = true) : bytes_(bytes) {
    if (bytes == 0) return;
    size_t rounded = (bytes + 63) / 64 * 64;
    data_ = std::aligned_alloc(64, rounded);
    if (data_ == nullptr) throw std::bad_alloc();
    if (zeroed) std::memset(data_, 0, rounded);
  }
  ~HostBuffer() { std::free(data_); }
  HostBuffer(HostBuffer &&o) noexcept
      : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  HostBuffer &operator=(HostBuffer &&o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  HostBuffer(const HostBuffer &) = delete;
  HostBuffer &operator=(const HostBuffer &) = delete;

  template <class T = void>
  T *data() const {
    return static_cast<T *>(data_);
  }
  char *bytes() const { return static_cast<char *>(data_); }
  size_t size() const { return bytes_; }
  bool empty() const { return data_ == nullptr; }
  void zero() {
    if (data_ != nullptr) std::memset(data_, 0, bytes_);
  }

 private:
  void *data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace zrt
