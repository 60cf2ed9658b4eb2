#include "memory/thread_copy_engine.hpp"

#include <chrono>
#include <cstring>

#include "runtime/gpu/memory_kind.hpp"

namespace zrt {

ThreadCopyEngine::ThreadCopyEngine() : thread_([this] { run(); }) {}

ThreadCopyEngine::~ThreadCopyEngine() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_.notify_all();
  thread_.join();
}

uint64_t ThreadCopyEngine::submit(void *dst, const void *src, size_t bytes) {
  uint64_t ticket;
  {
    std::lock_guard lock(mutex_);
    ticket = ++submitted_;
    queue_.push_back({dst, src, bytes, ticket});
  }
  work_.notify_one();
  return ticket;
}

bool ThreadCopyEngine::done(uint64_t ticket) {
  std::lock_guard lock(mutex_);
  return completed_ >= ticket;
}

void ThreadCopyEngine::wait(uint64_t ticket) {
  std::unique_lock lock(mutex_);
  finished_.wait(lock, [&] { return completed_ >= ticket; });
}

void ThreadCopyEngine::copy(void *dst, const void *src, size_t bytes) {
  std::memcpy(dst, src, bytes);
}

MemorySpace ThreadCopyEngine::space_of(const void *ptr) const {
  return memory_kind(ptr) == MemoryKind::Device ? MemorySpace::Device : MemorySpace::Host;
}

double ThreadCopyEngine::busy_seconds() const {
  std::lock_guard lock(mutex_);
  return busy_;
}

void ThreadCopyEngine::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and nothing left
    Task t = queue_.front();
    queue_.pop_front();
    lock.unlock();
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(t.dst, t.src, t.bytes);
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    lock.lock();
    busy_ += dt;
    completed_ = t.ticket;
    finished_.notify_all();
  }
}

}  // namespace zrt
