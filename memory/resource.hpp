// Where a pool's memory comes from (Umpire's "resource"; the pool is the strategy on top).
//
// Two shapes of resource exist:
//  - reserving resources (host, pinned host without CUDA) reserve one range of address
//    space for the pool's whole limit and commit segments inside it at either end, so
//    the pool can grow long-lived memory upwards and transient memory downwards and
//    still coalesce across every segment;
//  - segmented resources (cudaMalloc, cudaHostAlloc) hand out independent segments.
// Every call that can fail throws zrt::Error; release paths never throw.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "memory/memory_space.hpp"

namespace zrt {

class Resource {
 public:
  virtual ~Resource() = default;

  virtual MemorySpace space() const = 0;
  // How the memory is obtained: "mmap", "mmap+mlock", "cudaHostAlloc", "cudaMalloc".
  virtual const char *kind() const = 0;
  // The CPU may read and write the memory (and ASan may poison it).
  virtual bool host_accessible() const = 0;
  // Every address this resource returns is aligned to this (a power of two).
  virtual size_t granularity() const = 0;

  // Reserving resources: reserve() address space once; commit()/decommit() whole
  // granules inside it. Segmented resources: allocate()/deallocate() segments.
  virtual bool reserves() const = 0;
  virtual void *reserve(size_t bytes) { return unsupported("reserve", bytes); }
  virtual void unreserve(void *base, size_t bytes) noexcept { (void)base, (void)bytes; }
  virtual void commit(void *at, size_t bytes) { unsupported("commit", bytes), (void)at; }
  virtual void decommit(void *at, size_t bytes) noexcept { (void)at, (void)bytes; }
  virtual void *allocate(size_t bytes) { return unsupported("allocate", bytes); }
  virtual void deallocate(void *ptr, size_t bytes) noexcept { (void)ptr, (void)bytes; }

  // Copies bytes from src to dst within this resource's memory; the ranges may overlap
  // (compaction slides buffers into space next to them).
  virtual void move(void *dst, const void *src, size_t bytes) = 0;

  // Placement facts for stats and zrt_context_describe.
  virtual bool page_locked() const { return false; }
  virtual int numa_node() const { return -1; }
  // Degradations the resource accepted instead of failing (mlock refused, no NUMA
  // binding), each once, also logged as warnings.
  virtual std::vector<std::string> warnings() const { return {}; }
  virtual nlohmann::json describe() const;

 private:
  [[noreturn]] void *unsupported(const char *what, size_t bytes);
};

}  // namespace zrt
