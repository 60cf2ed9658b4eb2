// Moves bytes asynchronously for activation offload. Copies submitted to one engine
// complete in submission order (one FIFO queue or one CUDA stream), which the offload
// engine relies on: a prefetch submitted after a push reads what the push wrote.
#pragma once

#include <cstddef>
#include <cstdint>

#include "memory/memory_space.hpp"

namespace zrt {

class CopyEngine {
 public:
  virtual ~CopyEngine() = default;
  virtual const char *name() const = 0;  // "thread", "cuda"

  // Starts copying bytes from src to dst (non-overlapping); returns a ticket > 0.
  virtual uint64_t submit(void *dst, const void *src, size_t bytes) = 0;
  // Whether the copy of ticket has finished; non-blocking.
  virtual bool done(uint64_t ticket) = 0;
  // Blocks until it has; throws Error(ZRT_ERR_BACKEND) if it failed.
  virtual void wait(uint64_t ticket) = 0;
  // Copies now and returns when dst holds the bytes.
  virtual void copy(void *dst, const void *src, size_t bytes) = 0;
  // Seconds the engine spent on submitted copies so far.
  virtual double busy_seconds() const = 0;
  // The memory space ptr points into, as far as this engine can tell (offload accounts
  // device memory saved and stages prefetches in the source's space).
  virtual MemorySpace space_of(const void *ptr) const = 0;
};

}  // namespace zrt
