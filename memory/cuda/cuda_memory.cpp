#include "memory/cuda/cuda_memory.hpp"

#include "memory/cuda/cuda_scope.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "runtime/error.hpp"
#include "runtime/format_bytes.hpp"

namespace zrt {

std::string cuda_unusable(int device) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("no usable CUDA device: ") + cudaGetErrorString(err);
  }
  if (device < 0 || device >= count)
    return "CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(count) +
           " visible)";
  return "";
}

void cuda_fail(zrt_status_t status, const char *call, cudaError_t err) {
  cudaGetLastError();
  fail(status, "{} failed: {}", call, cudaGetErrorString(err));
}

namespace {

[[noreturn]] void cuda_fail(zrt_status_t status, const char *call, cudaError_t err, size_t bytes) {
  cudaGetLastError();
  fail(status, "{} of {} failed: {}", call, format_bytes(bytes), cudaGetErrorString(err));
}

class CudaDeviceResource final : public Resource {
 public:
  explicit CudaDeviceResource(int device) : device_(device) {}
  MemorySpace space() const override { return MemorySpace::Device; }
  const char *kind() const override { return "cudaMalloc"; }
  bool host_accessible() const override { return false; }
  size_t granularity() const override { return size_t{2} << 20; }
  bool reserves() const override { return false; }
  bool page_locked() const override { return true; }

  void *allocate(size_t bytes) override {
    DeviceScope scope(device_);
    void *p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err != cudaSuccess) cuda_fail(ZRT_ERR_OUT_OF_MEMORY, "cudaMalloc", err, bytes);
    return p;
  }
  void deallocate(void *ptr, size_t) noexcept override {
    DeviceScope scope(device_);
    cudaFree(ptr);
  }
  void move(void *dst, const void *src, size_t bytes) override {
    // cudaMemcpy does not allow overlap: copy in pieces no longer than the distance,
    // in the direction that reads each piece before it is overwritten.
    DeviceScope scope(device_);
    auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
    size_t distance = d > s ? d - s : s - d;
    size_t piece = std::min(bytes, std::max<size_t>(distance, 1));
    for (size_t done = 0; done < bytes; done += piece) {
      size_t n = std::min(piece, bytes - done);
      size_t at = d < s ? done : bytes - done - n;
      cudaError_t err =
          cudaMemcpy(reinterpret_cast<char *>(dst) + at, reinterpret_cast<const char *>(src) + at,
                     n, cudaMemcpyDeviceToDevice);
      if (err != cudaSuccess) cuda_fail(ZRT_ERR_BACKEND, "cudaMemcpy (compaction)", err, n);
    }
  }
  nlohmann::json describe() const override {
    nlohmann::json j = Resource::describe();
    j["device"] = device_;
    return j;
  }

 private:
  int device_;
};

class CudaPinnedResource final : public Resource {
 public:
  explicit CudaPinnedResource(int device) : device_(device) {}
  MemorySpace space() const override { return MemorySpace::PinnedHost; }
  const char *kind() const override { return "cudaHostAlloc"; }
  bool host_accessible() const override { return true; }
  size_t granularity() const override { return 4096; }
  bool reserves() const override { return false; }
  bool page_locked() const override { return true; }

  void *allocate(size_t bytes) override {
    DeviceScope scope(device_);
    void *p = nullptr;
    cudaError_t err = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
    if (err != cudaSuccess) cuda_fail(ZRT_ERR_OUT_OF_MEMORY, "cudaHostAlloc", err, bytes);
    return p;
  }
  void deallocate(void *ptr, size_t) noexcept override { cudaFreeHost(ptr); }
  void move(void *dst, const void *src, size_t bytes) override { std::memmove(dst, src, bytes); }

 private:
  int device_;
};

class CudaCopyEngine final : public CopyEngine {
 public:
  explicit CudaCopyEngine(int device) : device_(device) {
    DeviceScope scope(device_);
    cudaError_t err = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (err != cudaSuccess) cuda_fail(ZRT_ERR_BACKEND, "cudaStreamCreateWithFlags", err, 0);
  }
  ~CudaCopyEngine() override {
    DeviceScope scope(device_);
    cudaStreamSynchronize(stream_);
    for (auto &[ticket, p] : pending_) {
      cudaEventDestroy(p.start);
      cudaEventDestroy(p.end);
    }
    for (cudaEvent_t e : spare_)
      cudaEventDestroy(e);
    cudaStreamDestroy(stream_);
  }

  const char *name() const override { return "cuda"; }

  uint64_t submit(void *dst, const void *src, size_t bytes) override {
    DeviceScope scope(device_);
    std::lock_guard lock(mutex_);
    Pending p{event(), event()};
    cudaEventRecord(p.start, stream_);
    cudaError_t err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_);
    if (err != cudaSuccess) {
      spare_.push_back(p.start);
      spare_.push_back(p.end);
      cuda_fail(ZRT_ERR_BACKEND, "cudaMemcpyAsync", err, bytes);
    }
    cudaEventRecord(p.end, stream_);
    pending_.emplace(++submitted_, p);
    return submitted_;
  }

  bool done(uint64_t ticket) override {
    DeviceScope scope(device_);
    std::lock_guard lock(mutex_);
    auto it = pending_.find(ticket);
    if (it == pending_.end()) return true;
    cudaError_t err = cudaEventQuery(it->second.end);
    if (err == cudaErrorNotReady) return false;
    retire(it, err);
    return true;
  }

  void wait(uint64_t ticket) override {
    DeviceScope scope(device_);
    std::lock_guard lock(mutex_);
    auto it = pending_.find(ticket);
    if (it == pending_.end()) return;
    retire(it, cudaEventSynchronize(it->second.end));
  }

  void copy(void *dst, const void *src, size_t bytes) override {
    DeviceScope scope(device_);
    // On the engine's stream, so it is ordered after the copies that filled src.
    cudaError_t err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream_);
    if (err != cudaSuccess) cuda_fail(ZRT_ERR_BACKEND, "cudaMemcpy", err, bytes);
  }

  double busy_seconds() const override {
    std::lock_guard lock(mutex_);
    return busy_;
  }

  MemorySpace space_of(const void *ptr) const override {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, ptr) != cudaSuccess) {
      cudaGetLastError();
      return MemorySpace::Host;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ? MemorySpace::Device
                                                                             : MemorySpace::Host;
  }

 private:
  struct Pending {
    cudaEvent_t start, end;
  };

  cudaEvent_t event() {
    if (!spare_.empty()) {
      cudaEvent_t e = spare_.back();
      spare_.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    cudaError_t err = cudaEventCreate(&e);
    if (err != cudaSuccess) cuda_fail(ZRT_ERR_BACKEND, "cudaEventCreate", err, 0);
    return e;
  }

  void retire(std::map<uint64_t, Pending>::iterator it, cudaError_t err) {
    Pending p = it->second;
    pending_.erase(it);
    float ms = 0;
    if (err == cudaSuccess && cudaEventElapsedTime(&ms, p.start, p.end) == cudaSuccess)
      busy_ += ms / 1e3;
    spare_.push_back(p.start);
    spare_.push_back(p.end);
    if (err != cudaSuccess) cuda_fail(ZRT_ERR_BACKEND, "an offload copy", err, 0);
  }

  int device_;
  cudaStream_t stream_ = nullptr;
  mutable std::mutex mutex_;
  std::map<uint64_t, Pending> pending_;
  std::vector<cudaEvent_t> spare_;
  uint64_t submitted_ = 0;
  double busy_ = 0;
};

}  // namespace

std::unique_ptr<Resource> make_cuda_device_resource(int device, std::string *why) {
  std::string reason = cuda_unusable(device);
  if (!reason.empty()) {
    if (why != nullptr) *why = reason;
    return nullptr;
  }
  return std::make_unique<CudaDeviceResource>(device);
}

std::unique_ptr<Resource> make_cuda_pinned_resource(int device, std::string *why) {
  std::string reason = cuda_unusable(device);
  if (!reason.empty()) {
    if (why != nullptr) *why = reason;
    return nullptr;
  }
  return std::make_unique<CudaPinnedResource>(device);
}

std::unique_ptr<CopyEngine> make_cuda_copy_engine(int device, std::string *why) {
  std::string reason = cuda_unusable(device);
  if (!reason.empty()) {
    if (why != nullptr) *why = reason;
    return nullptr;
  }
  return std::make_unique<CudaCopyEngine>(device);
}

size_t cuda_device_memory(int device) {
  if (!cuda_unusable(device).empty()) return 0;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return prop.totalGlobalMem;
}

}  // namespace zrt
