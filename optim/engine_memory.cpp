#include "optim/engine_memory.hpp"

#include <chrono>
#include <cstring>

#include "comm/comm_memory.hpp"
#include "memory/borrowed_resource.hpp"
#include "memory/host_resource.hpp"
#include "memory/memory_part.hpp"
#include "memory/pool_block.hpp"
#include "runtime/error.hpp"
#include "runtime/gpu/memory_kind.hpp"
#include "runtime/log.hpp"

namespace zrt {

const char *place_name(Place place) {
  switch (place) {
    case Place::Host:
      return "host";
    case Place::Pinned:
      return "pinned host";
    case Place::Device:
      return "device";
    case Place::Shared:
      return "node-shared host";
  }
  return "?";
}

EngineBuffer::EngineBuffer(EngineMemory &memory, Place place, size_t bytes, Lifetime lifetime,
                           bool zeroed)
    : place_(place) {
  if (bytes == 0) return;
  if (place == Place::Shared) {
    place_ = Place::Host;
    if (memory.shared()) {
      // The window is sized for what the engine knows it needs at commit; what comes later
      // (stage 3's extra groups, buckets added for out-of-order gradients) may not fit.
      Pool &shared = memory.pool(Place::Shared);
      const PoolStats s = shared.stats();
      const size_t rounded = round_up(bytes, shared.options().alignment);
      // An estimate (the free block and the uncommitted middle may not be one piece): the
      // allocation itself decides.
      if (s.largest_free + (s.limit - s.reserved) >= rounded) {
        try {
          alloc_ = PoolAllocation::allocate(shared, bytes, lifetime);
          place_ = Place::Shared;
        } catch (const Error &e) {
          if (e.status() != ZRT_ERR_OUT_OF_MEMORY) throw;
        }
      }
      if (place_ != Place::Shared) memory.note_shared_fallback();
    }
  }
  if (!alloc_) alloc_ = PoolAllocation::allocate(memory.pool(place_), bytes, lifetime);
  if (zeroed) memory.zero(place_, alloc_.data(), bytes);
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
  if (shared_ != nullptr) {
    try {
      context_.part<MemoryPart>().destroy_pool(*shared_);
    } catch (const Error &e) {
      // A buffer outlived the engine's parts (a bug): the pool stays with the context.
      log::error("engine: the node-shared pool stays allocated: {}", e.what());
    }
  }
}

void EngineMemory::share(CommMemory &comm_memory, size_t bytes) {
  const size_t page = page_size();
  bytes = round_up(bytes, page);
  // The window's parts are aligned to 4 KiB; a page more lets the pool start on a page of
  // this system's size (64 KiB on some).
  char *window = static_cast<char *>(comm_memory.allocate(bytes + page, ""));
  window +=
      round_up(reinterpret_cast<uintptr_t>(window), page) - reinterpret_cast<uintptr_t>(window);
  // From here on only this rank's bookkeeping: an error leaves the window to the
  // communicator, which frees it on every rank together.
  PoolOptions o;
  o.name = "engine node-shared buffers";
  o.limit = bytes;
  o.segment_bytes = page;
  o.alignment = page;
  o.compact = CompactPolicy::Off;
  o.limit_key = "the engine's window (engine.shared_buffers)";
  o.thread_cache_bytes = 0;  // every block of the window is the engine's, none idle elsewhere
  shared_ = &context_.part<MemoryPart>().create_pool(
      std::make_unique<BorrowedResource>(window, bytes, "MPI shared window"), std::move(o));
  shared_peers_ = comm_memory.shared_peers();
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
    case Place::Shared:
      if (shared_ == nullptr) fail(ZRT_ERR_INTERNAL, "the engine has no node-shared pool");
      return *shared_->pool;
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

Event EngineMemory::recorded() {
  if (!stream_) return Event();
  return stream_->record();
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
