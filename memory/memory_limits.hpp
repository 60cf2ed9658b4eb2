// What bounds the host memory of this process, as the system records it, and what the
// process uses of it now:
//  - the node's physical memory;
//  - the limit of the memory cgroup the process is in: cgroup v2 memory.max or v1
//    memory.limit_in_bytes, the smallest along the cgroup's path up to the hierarchy's top
//    (Slurm's cgroup plugin sets the job's limit on the job's cgroup, above the tasks');
//  - RLIMIT_AS (ulimit -v), which counts address space: reserved ranges too;
//  - RLIMIT_DATA (ulimit -d), which counts private writable mappings.
// Physical memory and a cgroup are shared by every process in them; the rlimits are each
// process's own. Everything is read from files under a root folder ("/" on the system; the
// tests pass fake trees), and what cannot be read is no limit: discovery never fails.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace zrt {

// In the order of zrt_memory_limit_kind_t.
enum class MemoryLimitKind { Physical, Cgroup, AddressSpace, Data };

struct MemoryLimit {
  MemoryLimitKind kind = MemoryLimitKind::Physical;
  size_t bytes = 0;
  std::string file;       // Cgroup: the file that sets it, as the system names it
  int sharing_ranks = 1;  // ranks of the context on this node under it (set by MemoryPart)
};

// What the process uses now (/proc/self/status): resident memory (VmRSS), mapped address
// space (VmSize) and private writable mappings (VmData).
struct ProcessUsage {
  size_t resident = 0, mapped = 0, data = 0;
};

// Where the limits are read from; current() is this process on this system.
struct LimitSources {
  std::filesystem::path root = "/";  // holds proc/self/{cgroup,mountinfo,status}, sys/fs/cgroup
  size_t physical_bytes = 0;
  std::optional<size_t> rlimit_as, rlimit_data;  // soft limits; none: unlimited
  static LimitSources current();
};

// Physical memory first, then each cgroup hierarchy's limit (v2, v1) where one is set,
// RLIMIT_AS and RLIMIT_DATA where finite.
std::vector<MemoryLimit> discover_memory_limits(const LimitSources &sources);

// What mlock may still pin in this process: RLIMIT_MEMLOCK (ulimit -l) less the locked
// memory (VmLck). A process with CAP_IPC_LOCK (root, usually) locks without limit.
struct LockLimit {
  bool limited = false;  // false: unlimited, or the process may exceed the limit
  size_t limit = 0, locked = 0;
  size_t room() const { return limit > locked ? limit - locked : 0; }
};
LockLimit read_lock_limit(const std::filesystem::path &root = "/");

// Zeros where the file cannot be read.
ProcessUsage read_process_usage(const std::filesystem::path &root = "/");

// What the process uses of the limit's kind: resident memory against physical memory and a
// cgroup, mapped address space against RLIMIT_AS, private writable memory against RLIMIT_DATA.
size_t used_under(const MemoryLimit &limit, const ProcessUsage &usage);
// What this rank may still use under the limit: its share (bytes / sharing_ranks) less what
// it uses; 0 when it uses more.
size_t room_under(const MemoryLimit &limit, const ProcessUsage &usage);
// The limit that leaves the least room; limits must not be empty.
const MemoryLimit &tightest_limit(const std::vector<MemoryLimit> &limits,
                                  const ProcessUsage &usage);

// "the memory cgroup's limit of 1.5 GiB (/sys/fs/cgroup/job_42/memory.max), shared by 2
// ranks on this node"
std::string describe_limit(const MemoryLimit &limit);
// How a user raises it: "a larger memory limit for the job (Slurm: --mem ...)".
const char *how_to_raise(MemoryLimitKind kind);

// The address space a process maps besides zerort's pools after a pool is made, kept free
// when RLIMIT_AS or RLIMIT_DATA sizes the pools: 256 MiB for the libraries' and MPI's later
// mappings (shared-memory segments, registration caches, BLAS buffers) and, for each of the
// `threads` the rank may run, 8 MiB of stack and glibc's 64 MiB malloc arena.
size_t limit_headroom(int threads);

// The default limit of a context's host pool (memory.host.limit = 0; the pinned and
// emulated device pools take half of it): the smallest of physical memory, the cgroup's
// limit, what RLIMIT_DATA leaves free less the headroom, and half of what RLIMIT_AS leaves
// free less the headroom (the other half is for the pinned and device pools, which reserve
// their limits too, and for what the program maps itself). `why` names the one that set it.
struct PoolLimit {
  size_t bytes = 0;
  std::string why;
};
PoolLimit default_pool_limit(const std::vector<MemoryLimit> &limits, const ProcessUsage &usage,
                             size_t headroom);

}  // namespace zrt
