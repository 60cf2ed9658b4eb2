// The rank's accelerator as zerort's layers use it: device memory, FIFO streams of
// copies, fills and device work, and events that order streams with each other and with
// the host. Two implementations, chosen once per context by MemoryPart::device():
//  - CUDA (memory/cuda/cuda_device.cpp): cudaMalloc memory, non-blocking streams,
//    cudaEvents; device work is a CUDA kernel launched on the stream;
//  - emulated (memory/emulated/emulated_device.cpp, memory.device.emulate): a separate
//    host arena whose addresses runtime/gpu/memory_kind.hpp reports as device memory,
//    streams that are one worker thread each running their queue in order, events that
//    complete when the worker gets there; device work is host code run by the worker.
// zerort's own code touches device memory only through a Stream (copy, fill, device
// work), so what passes on the emulated device here is what a GPU needs; only the CUDA
// kernels and the CUDA stream and event calls are left to a real GPU.
//
// Thread safety: a Device may be used from any thread; one Stream from one thread at a
// time (enqueueing is serialized by its owner, as with a cudaStream_t).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "memory/resource.hpp"
#include "runtime/error.hpp"

namespace zrt {

// Completes when the work enqueued on its stream before it was recorded has finished.
// Copyable; an empty Event is complete.
class Event {
 public:
  struct State {
    virtual ~State() = default;
    virtual bool done() = 0;         // non-blocking
    virtual void synchronize() = 0;  // the host waits; throws Error(ZRT_ERR_BACKEND)
    // Seconds from start to this event on the stream's clock, both timed (record_timed)
    // and complete; false when either is untimed.
    virtual bool seconds_since(State &start, double *seconds) {
      (void)start;
      (void)seconds;
      return false;
    }
  };
  Event() = default;
  explicit Event(std::shared_ptr<State> state) : state_(std::move(state)) {}
  bool done() const { return !state_ || state_->done(); }
  void synchronize() const {
    if (state_) state_->synchronize();
  }
  State *state() const { return state_.get(); }
  // Seconds between two complete timed events of one stream (Stream::record_timed);
  // throws Error(ZRT_ERR_INTERNAL) when they are not.
  double seconds_since(const Event &start) const {
    double seconds = 0;
    if (!state_ || !start.state_ || !state_->seconds_since(*start.state_, &seconds))
      fail(ZRT_ERR_INTERNAL, "seconds between events that are not both timed");
    return seconds;
  }
  explicit operator bool() const { return state_ != nullptr; }

 private:
  std::shared_ptr<State> state_;
};

class Stream {
 public:
  virtual ~Stream() = default;  // waits for the work enqueued (a wrapped stream: nothing)

  // Copies bytes between any memory of this device and host memory (pinned or not), in
  // stream order. dst and src must not overlap, and stay valid until the copy is done.
  virtual void copy(void *dst, const void *src, size_t bytes) = 0;
  // Sets bytes of device or host memory to value, in stream order.
  virtual void fill(void *dst, int value, size_t bytes) = 0;
  // Device work in stream order: on the emulated device the host function itself, run by
  // the stream's worker; on CUDA the implementation launches a kernel and calls nothing
  // of this (see DeviceWork below).
  virtual void run(const std::function<void()> &work) = 0;
  // An event that completes when everything enqueued so far has.
  virtual Event record() = 0;
  // The same, stamped with the time the stream reaches it (CUDA: a timing event, which
  // costs more than record's), for Event::seconds_since.
  virtual Event record_timed() = 0;
  // Work enqueued after this waits for e (the host does not wait).
  virtual void wait(const Event &e) = 0;
  // The host waits for everything enqueued so far.
  virtual void synchronize() = 0;
  // The cudaStream_t behind it, nullptr on the emulated device.
  virtual void *native() const = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const char *kind() const = 0;  // "cuda", "emulated"
  virtual int index() const = 0;         // the CUDA device, 0 when emulated
  virtual std::string describe() const = 0;

  // The device memory behind the context's ZRT_MEMORY_DEVICE pool.
  virtual std::unique_ptr<Resource> make_resource() = 0;
  // A stream of zerort's own (CUDA: non-blocking, so the legacy default stream does not
  // order it).
  virtual std::unique_ptr<Stream> make_stream() = 0;
  // The program's stream, not owned: a cudaStream_t, or nullptr for CUDA's default stream;
  // on the emulated device the program computes on the host, so every stream is nullptr
  // and stands for the calling thread (work runs there, waits block it).
  virtual std::unique_ptr<Stream> wrap_stream(void *native) = 0;
  // Whether pointer lies in this device's memory (for argument checks).
  virtual bool owns(const void *pointer) const = 0;
};

}  // namespace zrt
