#include "memory/emulated/emulated_device.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "memory/host_resource.hpp"
#include "runtime/error.hpp"
#include "runtime/gpu/emulated_ranges.hpp"

namespace zrt {

namespace {

// Device memory: host pages, reserved apart from the host pool's and registered as
// device memory for as long as they are reserved.
class EmulatedResource final : public HostResource {
 public:
  MemorySpace space() const override { return MemorySpace::Device; }
  const char *kind() const override { return "emulated"; }
  void *reserve(size_t bytes) override {
    void *p = HostResource::reserve(bytes);
    add_emulated_device_range(p, bytes);
    return p;
  }
  void unreserve(void *base, size_t bytes) noexcept override {
    remove_emulated_device_range(base);
    HostResource::unreserve(base, bytes);
  }
};

// The queue a stream's worker runs. Shared with the events recorded on it, which may
// outlive the stream.
class Queue {
 public:
  Queue() : thread_([this] { run(); }) {}
  ~Queue() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    work_.notify_all();
    thread_.join();
  }

  uint64_t push(std::function<void()> task) {
    uint64_t ticket;
    {
      std::lock_guard lock(mutex_);
      ticket = ++submitted_;
      tasks_.push_back(std::move(task));
    }
    work_.notify_one();
    return ticket;
  }
  uint64_t submitted() {
    std::lock_guard lock(mutex_);
    return submitted_;
  }
  bool done(uint64_t ticket) {
    std::lock_guard lock(mutex_);
    return completed_ >= ticket;
  }
  void wait(uint64_t ticket) {
    std::unique_lock lock(mutex_);
    finished_.wait(lock, [&] { return completed_ >= ticket; });
    if (!failure_.empty()) fail(ZRT_ERR_BACKEND, "emulated device stream: {}", failure_);
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stop_ and nothing left
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      std::string error;
      try {
        task();
      } catch (const std::exception &e) {
        error = e.what();
      } catch (...) {
        error = "unknown exception";
      }
      lock.lock();
      if (!error.empty() && failure_.empty()) failure_ = error;  // sticky, as CUDA's errors
      ++completed_;
      finished_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable work_, finished_;
  std::deque<std::function<void()>> tasks_;
  uint64_t submitted_ = 0, completed_ = 0;
  std::string failure_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after everything it uses exists
};

class QueueEvent final : public Event::State {
 public:
  QueueEvent(std::shared_ptr<Queue> queue, uint64_t ticket)
      : queue_(std::move(queue)), ticket_(ticket) {}
  bool done() override { return queue_->done(ticket_); }
  void synchronize() override { queue_->wait(ticket_); }

 private:
  std::shared_ptr<Queue> queue_;
  uint64_t ticket_;
};

// A QueueEvent stamped by the worker as it passes it (or at once, on the caller's stream).
class TimedEvent final : public Event::State {
 public:
  using Clock = std::chrono::steady_clock;
  TimedEvent(std::shared_ptr<Queue> queue, uint64_t ticket,
             std::shared_ptr<std::atomic<int64_t>> stamp)
      : queue_(std::move(queue)), ticket_(ticket), stamp_(std::move(stamp)) {}
  static int64_t now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
        .count();
  }
  bool done() override { return !queue_ || queue_->done(ticket_); }
  void synchronize() override {
    if (queue_) queue_->wait(ticket_);
  }
  bool seconds_since(Event::State &start, double *seconds) override {
    auto *s = dynamic_cast<TimedEvent *>(&start);
    if (s == nullptr) return false;
    *seconds = static_cast<double>(stamp_->load() - s->stamp_->load()) * 1e-9;
    return true;
  }

 private:
  std::shared_ptr<Queue> queue_;  // null: stamped when recorded
  uint64_t ticket_;
  std::shared_ptr<std::atomic<int64_t>> stamp_;
};

class WorkerStream final : public Stream {
 public:
  WorkerStream() : queue_(std::make_shared<Queue>()) {}
  ~WorkerStream() override {
    try {
      synchronize();
    } catch (...) {
      // A failed task was reported to whoever waited for it.
    }
  }
  void copy(void *dst, const void *src, size_t bytes) override {
    queue_->push([=] { std::memcpy(dst, src, bytes); });
  }
  void fill(void *dst, int value, size_t bytes) override {
    queue_->push([=] { std::memset(dst, value, bytes); });
  }
  void run(const std::function<void()> &work) override { queue_->push(work); }
  Event record() override {
    return Event(std::make_shared<QueueEvent>(queue_, queue_->submitted()));
  }
  Event record_timed() override {
    auto stamp = std::make_shared<std::atomic<int64_t>>(0);
    const uint64_t ticket = queue_->push([stamp] { stamp->store(TimedEvent::now()); });
    return Event(std::make_shared<TimedEvent>(queue_, ticket, std::move(stamp)));
  }
  void wait(const Event &e) override {
    if (e.done()) return;
    queue_->push([e] { e.synchronize(); });
  }
  void synchronize() override { queue_->wait(queue_->submitted()); }
  void *native() const override { return nullptr; }

 private:
  std::shared_ptr<Queue> queue_;
};

// The program's "stream": the program computes on the host, in its own thread, so its
// work is done when it returns and waiting for an event blocks it.
class CallerStream final : public Stream {
 public:
  void copy(void *dst, const void *src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void fill(void *dst, int value, size_t bytes) override { std::memset(dst, value, bytes); }
  void run(const std::function<void()> &work) override { work(); }
  Event record() override { return Event(); }
  Event record_timed() override {
    return Event(std::make_shared<TimedEvent>(
        nullptr, 0, std::make_shared<std::atomic<int64_t>>(TimedEvent::now())));
  }
  void wait(const Event &e) override { e.synchronize(); }
  void synchronize() override {}
  void *native() const override { return nullptr; }
};

class EmulatedDevice final : public Device {
 public:
  const char *kind() const override { return "emulated"; }
  int index() const override { return 0; }
  std::string describe() const override {
    return "emulated device (memory.device.emulate): host memory behind device addresses, "
           "worker-thread streams";
  }
  std::unique_ptr<Resource> make_resource() override {
    return std::make_unique<EmulatedResource>();
  }
  std::unique_ptr<Stream> make_stream() override { return std::make_unique<WorkerStream>(); }
  std::unique_ptr<Stream> wrap_stream(void *native) override {
    if (native != nullptr)
      fail(ZRT_ERR_INVALID_ARGUMENT,
           "stream is {}, but the device is emulated (memory.device.emulate): the program "
           "computes on the host and has no CUDA stream; pass NULL",
           native);
    return std::make_unique<CallerStream>();
  }
  bool owns(const void *pointer) const override { return in_emulated_device_range(pointer); }
};

}  // namespace

std::unique_ptr<Device> make_emulated_device() {
  return std::make_unique<EmulatedDevice>();
}

}  // namespace zrt
