#include "optim/kernels/thread_pool.hpp"

#include <algorithm>

#include "runtime/log.hpp"

namespace zrt {

ThreadPool::ThreadPool(int threads, hwloc_topology_t topology, hwloc_const_cpuset_t cpuset) {
  int pus = cpuset != nullptr ? hwloc_bitmap_weight(cpuset) : 1;
  if (threads <= 0) threads = std::max(1, pus);
  std::vector<unsigned> units;
  if (cpuset != nullptr) {
    unsigned id;
    hwloc_bitmap_foreach_begin(id, cpuset) units.push_back(id);
    hwloc_bitmap_foreach_end();
  }
  for (int w = 1; w < threads; ++w) {
    workers_.emplace_back([this, w, topology, units] {
      if (topology != nullptr && !units.empty()) {
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        hwloc_bitmap_only(set, units[static_cast<size_t>(w) % units.size()]);
        if (hwloc_set_cpubind(topology, set, HWLOC_CPUBIND_THREAD) != 0)
          log::debug("optimizer thread {}: binding failed, running unbound", w);
        hwloc_bitmap_free(set);
      }
      loop(w);
    });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto &t : workers_)
    t.join();
}

void ThreadPool::loop(int worker) {
  unsigned long seen = 0;
  for (;;) {
    const std::function<void(int)> *task;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      task = task_;
    }
    (*task)(worker);
    {
      std::lock_guard lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::run(const std::function<void(int)> &fn) {
  if (workers_.empty()) {
    fn(0);
    return;
  }
  std::lock_guard turn(run_mutex_);
  {
    std::lock_guard lock(mutex_);
    task_ = &fn;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  fn(0);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
}

void ThreadPool::parallel_for(size_t count, size_t grain,
                              const std::function<void(size_t, size_t)> &fn) {
  const size_t n = static_cast<size_t>(size());
  if (n == 1 || count <= grain) {
    if (count > 0) fn(0, count);
    return;
  }
  const size_t units = (count + grain - 1) / grain;
  run([&](int worker) {
    size_t w = static_cast<size_t>(worker);
    size_t begin = std::min(count, units * w / n * grain);
    size_t end = std::min(count, units * (w + 1) / n * grain);
    if (begin < end) fn(begin, end);
  });
}

}  // namespace zrt
