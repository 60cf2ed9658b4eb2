// An owned, zero-initialized host allocation for the engine's state and buffers, taken
// from the context's host pool (memory/): long-lived state (parameters, master weights,
// moments, the gradient buffer) packs at one end of the pool, transient buffers (gradient
// buckets, landing slices, gathered stage-3 buckets) at the other. Raw allocations: the
// addresses reach the program (zrt_param_data, zrt_grad_data) and MPI, so they never move.
#pragma once

#include <cstddef>
#include <cstring>
#include <utility>

#include "memory/pool_buffer.hpp"

namespace zrt {

class HostBuffer {
 public:
  HostBuffer() = default;
  // zeroed = false skips the memset, for buffers that are entirely overwritten first.
  // Throws zrt::Error (out of memory, with the pool's stats) when the pool cannot serve it.
  HostBuffer(Pool &pool, size_t bytes, Lifetime lifetime, bool zeroed = true) {
    if (bytes == 0) return;
    alloc_ = PoolAllocation::allocate(pool, bytes, lifetime);
    if (zeroed) std::memset(alloc_.data(), 0, bytes);
  }
  HostBuffer(HostBuffer &&) noexcept = default;
  HostBuffer &operator=(HostBuffer &&) noexcept = default;
  HostBuffer(const HostBuffer &) = delete;
  HostBuffer &operator=(const HostBuffer &) = delete;

  template <class T = void>
  T *data() const {
    return static_cast<T *>(alloc_.data());
  }
  char *bytes() const { return static_cast<char *>(alloc_.data()); }
  size_t size() const { return alloc_.size(); }
  bool empty() const { return !alloc_; }
  void zero() {
    if (alloc_) std::memset(alloc_.data(), 0, alloc_.size());
  }

 private:
  PoolAllocation alloc_;
};

}  // namespace zrt
