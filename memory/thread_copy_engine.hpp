// The copy engine of host memory: one thread that runs memcpy for a FIFO queue of
// copies, so the caller's compute goes on while activations stream to pinned memory.
// The thread shares the rank's binding (it is started by the rank's thread), which keeps
// its copies on the rank's own NUMA node.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "memory/copy_engine.hpp"

namespace zrt {

class ThreadCopyEngine final : public CopyEngine {
 public:
  ThreadCopyEngine();
  ~ThreadCopyEngine() override;  // finishes the queued copies, then joins

  const char *name() const override { return "thread"; }
  uint64_t submit(void *dst, const void *src, size_t bytes) override;
  bool done(uint64_t ticket) override;
  void wait(uint64_t ticket) override;
  void copy(void *dst, const void *src, size_t bytes) override;
  double busy_seconds() const override;
  // Host memory, or the emulated device's (memory.device.emulate), which is host memory
  // this engine copies like any other.
  MemorySpace space_of(const void *ptr) const override;

 private:
  struct Task {
    void *dst;
    const void *src;
    size_t bytes;
    uint64_t ticket;
  };
  void run();

  mutable std::mutex mutex_;
  std::condition_variable work_, finished_;
  std::deque<Task> queue_;
  uint64_t submitted_ = 0, completed_ = 0;
  double busy_ = 0;
  bool stop_ = false;
  std::thread thread_;  // last: starts after everything it uses exists
};

}  // namespace zrt
