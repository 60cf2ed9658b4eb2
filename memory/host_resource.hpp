// Ordinary host memory: one anonymous PROT_NONE reservation for the pool's limit, in
// which segments are committed (mapped read-write) and decommitted (mapped back to
// PROT_NONE, which returns the pages). Reserving costs no memory, only address space, so
// the pool can grow at both ends of one contiguous range.
#pragma once

#include "memory/resource.hpp"

namespace zrt {

class HostResource : public Resource {
 public:
  HostResource();

  MemorySpace space() const override { return MemorySpace::Host; }
  const char *kind() const override { return "mmap"; }
  bool host_accessible() const override { return true; }
  size_t granularity() const override { return page_; }
  bool reserves() const override { return true; }
  void *reserve(size_t bytes) override;
  void unreserve(void *base, size_t bytes) noexcept override;
  void commit(void *at, size_t bytes) override;
  void decommit(void *at, size_t bytes) noexcept override;
  void move(void *dst, const void *src, size_t bytes) override;

 protected:
  size_t page_;
};

// The system's page size.
size_t page_size();
// Physical memory of this machine in bytes (sysconf), for default limits.
size_t physical_memory_bytes();

}  // namespace zrt
