// The CUDA device (memory/device.hpp): cudaMalloc memory, non-blocking streams, events.
#include "memory/cuda/cuda_device.hpp"

#include <cuda_runtime_api.h>

#include <fmt/format.h>

#include "memory/cuda/cuda_memory.hpp"
#include "memory/cuda/cuda_scope.hpp"

namespace zrt {

namespace {

class CudaEvent final : public Event::State {
 public:
  CudaEvent(int device, cudaStream_t stream, bool timed = false) : device_(device) {
    DeviceScope scope(device_);
    cudaError_t err =
        cudaEventCreateWithFlags(&event_, timed ? cudaEventDefault : cudaEventDisableTiming);
    if (err != cudaSuccess) cuda_fail(ZRT_ERR_BACKEND, "cudaEventCreateWithFlags", err);
    err = cudaEventRecord(event_, stream);
    if (err != cudaSuccess) {
      cudaEventDestroy(event_);
      cuda_fail(ZRT_ERR_BACKEND, "cudaEventRecord", err);
    }
  }
  ~CudaEvent() override {
    DeviceScope scope(device_);
    cudaEventDestroy(event_);
  }
  bool done() override {
    cudaError_t err = cudaEventQuery(event_);
    if (err == cudaErrorNotReady) return false;
    if (err != cudaSuccess) cuda_fail(ZRT_ERR_BACKEND, "cudaEventQuery", err);
    return true;
  }
  void synchronize() override {
    cudaError_t err = cudaEventSynchronize(event_);
    if (err != cudaSuccess) cuda_fail(ZRT_ERR_BACKEND, "cudaEventSynchronize", err);
  }
  bool seconds_since(Event::State &start, double *seconds) override {
    auto *s = dynamic_cast<CudaEvent *>(&start);
    if (s == nullptr) return false;
    float ms = 0;
    if (cudaEventElapsedTime(&ms, s->event_, event_) != cudaSuccess) {
      cudaGetLastError();  // an untimed event: not sticky
      return false;
    }
    *seconds = ms * 1e-3;
    return true;
  }
  cudaEvent_t get() const { return event_; }

 private:
  int device_;
  cudaEvent_t event_ = nullptr;
};

void CUDART_CB run_host_work(void *data) {
  auto *work = static_cast<std::function<void()> *>(data);
  try {
    (*work)();
  } catch (...) {
    // A host function cannot report to CUDA; the work itself records its failures.
  }
  delete work;
}

class CudaStream final : public Stream {
 public:
  // owned: a stream of zerort's, created here; else the program's `stream`, wrapped.
  CudaStream(int device, bool owned, cudaStream_t stream)
      : device_(device), owned_(owned), stream_(stream) {
    if (!owned_) return;
    DeviceScope scope(device_);
    cudaError_t err = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (err != cudaSuccess) cuda_fail(ZRT_ERR_BACKEND, "cudaStreamCreateWithFlags", err);
  }
  ~CudaStream() override {
    if (!owned_) return;
    DeviceScope scope(device_);
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  void copy(void *dst, const void *src, size_t bytes) override {
    DeviceScope scope(device_);
    cudaError_t err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_);
    if (err != cudaSuccess) cuda_fail(ZRT_ERR_BACKEND, "cudaMemcpyAsync", err);
  }
  void fill(void *dst, int value, size_t bytes) override {
    DeviceScope scope(device_);
    cudaError_t err = cudaMemsetAsync(dst, value, bytes, stream_);
    if (err != cudaSuccess) cuda_fail(ZRT_ERR_BACKEND, "cudaMemsetAsync", err);
  }
  void run(const std::function<void()> &work) override {
    DeviceScope scope(device_);
    auto *copy = new std::function<void()>(work);
    cudaError_t err = cudaLaunchHostFunc(stream_, run_host_work, copy);
    if (err != cudaSuccess) {
      delete copy;
      cuda_fail(ZRT_ERR_BACKEND, "cudaLaunchHostFunc", err);
    }
  }
  Event record() override { return Event(std::make_shared<CudaEvent>(device_, stream_)); }
  Event record_timed() override {
    return Event(std::make_shared<CudaEvent>(device_, stream_, true));
  }
  void wait(const Event &e) override {
    if (!e) return;
    auto *cuda = dynamic_cast<CudaEvent *>(e.state());
    if (cuda == nullptr) {
      e.synchronize();  // an event of another kind of stream: the host waits for it
      return;
    }
    DeviceScope scope(device_);
    cudaError_t err = cudaStreamWaitEvent(stream_, cuda->get(), 0);
    if (err != cudaSuccess) cuda_fail(ZRT_ERR_BACKEND, "cudaStreamWaitEvent", err);
  }
  void synchronize() override {
    DeviceScope scope(device_);
    cudaError_t err = cudaStreamSynchronize(stream_);
    if (err != cudaSuccess) cuda_fail(ZRT_ERR_BACKEND, "cudaStreamSynchronize", err);
  }
  void *native() const override { return stream_; }

 private:
  int device_;
  bool owned_;
  cudaStream_t stream_ = nullptr;
};

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int device) : device_(device) {}
  const char *kind() const override { return "cuda"; }
  int index() const override { return device_; }
  std::string describe() const override {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device_) != cudaSuccess) {
      cudaGetLastError();
      return fmt::format("CUDA device {}", device_);
    }
    return fmt::format("CUDA device {} ({}, sm_{}{}, {} GiB)", device_, prop.name, prop.major,
                       prop.minor, prop.totalGlobalMem >> 30);
  }
  std::unique_ptr<Resource> make_resource() override {
    std::string why;
    std::unique_ptr<Resource> r = make_cuda_device_resource(device_, &why);
    if (!r) fail(ZRT_ERR_NOT_SUPPORTED, "no device memory: {}", why);
    return r;
  }
  std::unique_ptr<Stream> make_stream() override {
    return std::make_unique<CudaStream>(device_, true, nullptr);
  }
  std::unique_ptr<Stream> wrap_stream(void *native) override {
    auto stream = static_cast<cudaStream_t>(native);
    if (stream != nullptr) {
      int device = -1;
      cudaError_t err = cudaStreamGetDevice(stream, &device);
      if (err != cudaSuccess) {
        cudaGetLastError();
        fail(ZRT_ERR_INVALID_ARGUMENT, "stream {} is not a CUDA stream: {}", native,
             cudaGetErrorString(err));
      }
      if (device != device_)
        fail(ZRT_ERR_INVALID_ARGUMENT,
             "stream {} belongs to CUDA device {}, but this rank's engine uses device {}", native,
             device, device_);
    }
    return std::make_unique<CudaStream>(device_, false, stream);
  }
  bool owns(const void *pointer) const override {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, pointer) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return a.type == cudaMemoryTypeDevice && a.device == device_;
  }

 private:
  int device_;
};

}  // namespace

void *cuda_event_of(const Event &e) {
  auto *cuda = dynamic_cast<CudaEvent *>(e.state());
  return cuda != nullptr ? cuda->get() : nullptr;
}

std::unique_ptr<Device> make_cuda_device(int device, std::string *why) {
  std::string reason = cuda_unusable(device);
  if (!reason.empty()) {
    if (why != nullptr) *why = reason;
    return nullptr;
  }
  return std::make_unique<CudaDevice>(device);
}

}  // namespace zrt
