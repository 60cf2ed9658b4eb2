#include "optim/engine_memory.hpp"

#include <chrono>
#include <cstring>

#include "memory/memory_part.hpp"
#include "runtime/error.hpp"
#include "runtime/gpu/memory_kind.hpp"

namespace zrt {

const char *place_name(Place place) {
  switch (place) {
    case Place::Host:
      return "host";
    case Place::Pinned:
      return "pinned host";
    case Place::Device:
      return "device";
  }
  return "?";
}

EngineBuffer::EngineBuffer(EngineMemory &memory, Place place, size_t bytes, Lifetime lifetime,
                           bool zeroed)
    : place_(place) {
  if (bytes == 0) return;
  alloc_ = PoolAllocation::allocate(memory.pool(place), bytes, lifetime);
  if (zeroed) memory.zero(place, alloc_.data(), bytes);
}

EngineMemory::EngineMemory(Context &context, bool on_device, void *program_stream,
                           const KernelTable &cpu)
    : context_(context) {
  if (!on_device) {
    if (program_stream != nullptr)
      fail(ZRT_ERR_INVALID_ARGUMENT,
           "stream is {}, but the engine lives in host memory (engine.memory_space = host): "
           "it has no device work to order; pass NULL",
           program_stream);
    return;
  }
  std::string why;
  device_ = context.part<MemoryPart>().device(&why);
  if (device_ == nullptr)
    fail(ZRT_ERR_NOT_SUPPORTED, "engine.memory_space is device, but this rank has no device: {}",
         why);
  stream_ = device_->make_stream();
  program_ = device_->wrap_stream(program_stream);
  kernels_ = make_device_kernels(*device_, cpu);
}

EngineMemory::~EngineMemory() {
  if (stream_) {
    try {
      stream_->synchronize();
    } catch (...) {
      // Reported by the operation that failed.
    }
  }
}

Pool &EngineMemory::pool(Place place) {
  MemoryPart &memory = context_.part<MemoryPart>();
  switch (place) {
    case Place::Host:
      return memory.pool(MemorySpace::Host);
    case Place::Pinned:
      return memory.pool(MemorySpace::PinnedHost);
    case Place::Device:
      return memory.pool(MemorySpace::Device);
  }
  fail(ZRT_ERR_INTERNAL, "unknown place");
}

void EngineMemory::zero(Place place, void *p, size_t bytes) {
  if (bytes == 0) return;
  if (place == Place::Device)
    stream_->fill(p, 0, bytes);
  else
    std::memset(p, 0, bytes);
}

void EngineMemory::copy(void *dst, const void *src, size_t bytes) {
  if (bytes == 0) return;
  if (on_device() &&
      (memory_kind(dst) == MemoryKind::Device || memory_kind(src) == MemoryKind::Device))
    stream_->copy(dst, src, bytes);
  else
    std::memcpy(dst, src, bytes);
}

void EngineMemory::synchronize() {
  if (stream_) stream_->synchronize();
}

void EngineMemory::offload_copy(void *dst, const void *src, size_t bytes) {
  if (!on_device() || bytes == 0) return copy(dst, src, bytes);
  Event start = stream_->record_timed();
  stream_->copy(dst, src, bytes);
  offload_copies_.emplace_back(std::move(start), stream_->record_timed());
}

void EngineMemory::offload_synchronize() {
  const auto t0 = std::chrono::steady_clock::now();
  synchronize();
  offload_exposed_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

EngineMemory::OffloadTimes EngineMemory::take_offload_times() {
  OffloadTimes t;
  for (const auto &[start, end] : offload_copies_)
    t.copy_seconds += end.seconds_since(start);
  t.exposed_seconds = offload_exposed_;
  offload_copies_.clear();
  offload_exposed_ = 0;
  return t;
}

void EngineMemory::program_waits() {
  if (program_) program_->wait(stream_->record());
}

Event EngineMemory::ready() {
  if (!stream_) return Event();
  stream_->wait(program_->record());
  return stream_->record();
}

void EngineMemory::set_program_stream(void *native) {
  if (!on_device()) {
    if (native != nullptr)
      fail(ZRT_ERR_INVALID_ARGUMENT,
           "stream is {}, but the engine lives in host memory (engine.memory_space = host): "
           "it has no device work to order; pass NULL",
           native);
    return;
  }
  // The new stream starts after everything the engine did for the old one.
  std::unique_ptr<Stream> next = device_->wrap_stream(native);
  next->wait(stream_->record());
  program_ = std::move(next);
}

}  // namespace zrt
