// The optimizer's worker threads: one per processing unit this rank is bound to, each
// pinned to its unit with hwloc, so the update of a shard runs on the rank's own cores
// and stays NUMA-local. The calling thread is worker 0.
#pragma once

#include <hwloc.h>

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace zrt {

class ThreadPool {
 public:
  // threads <= 0: one per PU of cpuset. topology and cpuset may be null (no binding).
  ThreadPool(int threads, hwloc_topology_t topology, hwloc_const_cpuset_t cpuset);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Runs fn(worker) on every worker, the caller being worker 0, and waits for all. Callers
  // on different threads (an engine's speculative step during backward, another engine's
  // step) take turns: one task at a time.
  void run(const std::function<void(int)> &fn);
  // Splits [0, count) into size() contiguous chunks of multiples of `grain` elements.
  void parallel_for(size_t count, size_t grain,
                    const std::function<void(size_t begin, size_t end)> &fn);

 private:
  void loop(int worker);

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one caller's task at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int)> *task_ = nullptr;
  unsigned long generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace zrt
