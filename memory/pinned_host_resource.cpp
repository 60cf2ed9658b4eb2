#include "memory/pinned_host_resource.hpp"

#include <sys/mman.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>

#include "runtime/format_bytes.hpp"
#include "runtime/log.hpp"

namespace zrt {

namespace {

std::string memlock_limit() {
  struct rlimit r {};
  if (getrlimit(RLIMIT_MEMLOCK, &r) != 0) return "unknown";
  if (r.rlim_cur == RLIM_INFINITY) return "unlimited";
  return format_bytes(static_cast<size_t>(r.rlim_cur));
}

}  // namespace

PinnedHostResource::PinnedHostResource(PinnedHostOptions options) : options_(std::move(options)) {
  if (!options_.lock) options_.lock = [](const void *p, size_t n) { return mlock(p, n); };
  numa_bound_ = options_.topology != nullptr && options_.numa_node >= 0;
}

void PinnedHostResource::warn_once(bool &flag, std::string message) {
  if (flag) return;
  flag = true;
  log::warn("{}", message);
  warnings_.push_back(std::move(message));
}

void PinnedHostResource::commit(void *at, size_t bytes) {
  HostResource::commit(at, bytes);
  std::lock_guard lock(mutex_);
  // Bind before anything touches the pages: mlock faults them in, on the bound node.
  if (numa_bound_) {
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    int rc = -1;
    if (set != nullptr) {
      hwloc_bitmap_only(set, static_cast<unsigned>(options_.numa_node));
      rc = hwloc_set_area_membind(options_.topology, at, bytes, set, HWLOC_MEMBIND_BIND,
                                  HWLOC_MEMBIND_BYNODESET);
      hwloc_bitmap_free(set);
    }
    if (rc != 0) {
      numa_bound_ = false;
      warn_once(warned_numa_, fmt::format("pinned host memory: binding to NUMA node {} failed "
                                          "({}); pages are placed by first touch",
                                          options_.numa_node, std::strerror(errno)));
    }
  }
  if (locking_ && options_.lock(at, bytes) != 0) {
    int err = errno;
    locking_ = false;
    all_locked_ = false;
    warn_once(warned_lock_,
              fmt::format("pinned host memory: mlock of {} failed ({}); RLIMIT_MEMLOCK is {}. "
                          "Continuing with pageable memory, which makes device and network "
                          "copies slower; raise the limit (ulimit -l unlimited, or memlock "
                          "in /etc/security/limits.conf) to pin it",
                          format_bytes(bytes), std::strerror(err), memlock_limit()));
  } else if (!locking_) {
    all_locked_ = false;
  }
}

void PinnedHostResource::decommit(void *at, size_t bytes) noexcept {
  munlock(at, bytes);  // harmless on pages that were never locked
  HostResource::decommit(at, bytes);
}

bool PinnedHostResource::page_locked() const {
  std::lock_guard lock(mutex_);
  return all_locked_;
}

int PinnedHostResource::numa_node() const {
  std::lock_guard lock(mutex_);
  return numa_bound_ ? options_.numa_node : -1;
}

std::vector<std::string> PinnedHostResource::warnings() const {
  std::lock_guard lock(mutex_);
  return warnings_;
}

}  // namespace zrt
