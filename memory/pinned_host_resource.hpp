// Pinned host memory without CUDA: committed like HostResource, bound to the rank's NUMA
// node with hwloc (hwloc_set_area_membind on each new segment, which is what
// hwloc_alloc_membind does for a fresh mapping; a reservation needs it per segment), and
// page-locked with mlock so copies to a device or NIC need no bounce buffer.
//
// mlock fails when the segment would exceed RLIMIT_MEMLOCK (for processes without
// CAP_IPC_LOCK). Pinning is an optimisation, so the resource then warns once, naming the
// limit and how to raise it, and continues with pageable memory; page_locked() reports it.
#pragma once

#include <hwloc.h>

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "memory/host_resource.hpp"

namespace zrt {

struct PinnedHostOptions {
  hwloc_topology_t topology = nullptr;  // nullptr: no NUMA binding
  int numa_node = -1;                   // OS index of the node to bind to; -1: none
  // mlock by default; tests substitute a refusal to exercise the fallback.
  std::function<int(const void *, size_t)> lock;
};

class PinnedHostResource final : public HostResource {
 public:
  explicit PinnedHostResource(PinnedHostOptions options);

  MemorySpace space() const override { return MemorySpace::PinnedHost; }
  const char *kind() const override { return "mmap+mlock"; }
  void commit(void *at, size_t bytes) override;
  void decommit(void *at, size_t bytes) noexcept override;

  bool page_locked() const override;
  int numa_node() const override;
  std::vector<std::string> warnings() const override;

 private:
  void warn_once(bool &flag, std::string message);

  PinnedHostOptions options_;
  mutable std::mutex mutex_;
  bool locking_ = true;     // false after the first refusal: later segments stay pageable
  bool all_locked_ = true;  // every committed segment is locked
  bool numa_bound_ = true;
  bool warned_lock_ = false, warned_numa_ = false;
  std::vector<std::string> warnings_;
};

}  // namespace zrt
