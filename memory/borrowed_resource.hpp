// A reserving resource over host memory that somebody else owns and keeps mapped for the
// pool's lifetime (the engine's node-shared window, say): the pool carves its blocks from
// that one range. Committing and decommitting change nothing (the owner decides when the
// pages come and go), so a pool over it never returns memory to the system, and the range
// must be whole pages.
#pragma once

#include <cstddef>
#include <string>

#include "memory/resource.hpp"

namespace zrt {

class BorrowedResource final : public Resource {
 public:
  // kind: how the owner obtained the range, for stats ("MPI shared window").
  BorrowedResource(void *base, size_t bytes, std::string kind);

  MemorySpace space() const override { return MemorySpace::Host; }
  const char *kind() const override { return kind_.c_str(); }
  bool host_accessible() const override { return true; }
  size_t granularity() const override { return page_; }
  bool reserves() const override { return true; }
  // The borrowed range, once; throws Error(ZRT_ERR_OUT_OF_MEMORY) for more than it holds.
  void *reserve(size_t bytes) override;
  void unreserve(void *base, size_t bytes) noexcept override;
  void commit(void *at, size_t bytes) override;
  void decommit(void *at, size_t bytes) noexcept override { (void)at, (void)bytes; }
  void move(void *dst, const void *src, size_t bytes) override;

 private:
  char *base_;
  size_t bytes_;
  size_t page_;
  std::string kind_;
  bool reserved_ = false;
};

}  // namespace zrt
