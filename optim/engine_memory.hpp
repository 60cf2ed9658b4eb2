// Where the engine's buffers live (engine.memory_space) and how zerort touches them.
//
// On the host every buffer comes from the context's host pool (the optimizer state from
// its pinned pool when offload_optimizer is on), and zerort reads and writes them as it
// likes. On the device the compute-dtype parameters, the gradients and every bucket come
// from the context's device pool, and so does the optimizer state unless it is offloaded
// (ZeRO-Offload: pinned host memory); zerort touches device memory only through the
// engine's stream: fills, copies and the device kernels (optim/kernels/device_kernels.hpp),
// in order, and orders that stream with the program's (zrt_engine_set_stream):
//  - what the program reads or writes next (a zeroed bucket buffer, updated parameters)
//    is ordered before the program's later work by program_waits();
//  - what the engine reads of the program's work (gradients) waits for program_event().
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "memory/device.hpp"
#include "memory/pool_buffer.hpp"
#include "optim/kernels/device_kernels.hpp"
#include "runtime/runtime_context.hpp"

namespace zrt {

// Shared: host memory every rank of the node maps (the engine's window, share()), for the
// buffers its collectives read in place; host memory where there is none, or it is full.
enum class Place { Host, Pinned, Device, Shared };
const char *place_name(Place place);  // "host", "pinned host", "device", "node-shared host"

class CommMemory;
class EngineMemory;
struct PoolEntry;

// An engine allocation, zeroed unless asked not to be, from its place's pool. Raw: its
// address reaches the program and the collectives, so it never moves. Move-only. Asked for
// Place::Shared, it is placed in host memory when the shared window cannot hold it, and
// place() says where it went.
class EngineBuffer {
 public:
  EngineBuffer() = default;
  // Throws Error (out of memory, with the pool's stats) when the pool cannot serve it.
  EngineBuffer(EngineMemory &memory, Place place, size_t bytes, Lifetime lifetime,
               bool zeroed = true);
  template <class T = void>
  T *data() const {
    return static_cast<T *>(alloc_.data());
  }
  char *bytes() const { return static_cast<char *>(alloc_.data()); }
  size_t size() const { return alloc_.size(); }
  bool empty() const { return !alloc_; }
  Place place() const { return place_; }

 private:
  PoolAllocation alloc_;
  Place place_ = Place::Host;
};

class EngineMemory {
 public:
  // on_device: the engine lives on the rank's device; throws
  // Error(ZRT_ERR_NOT_SUPPORTED) naming why when the rank has none. program_stream: the
  // program's stream (a cudaStream_t, or nullptr). cpu: the kernels the emulated device
  // runs.
  EngineMemory(Context &context, bool on_device, void *program_stream, const KernelTable &cpu);
  ~EngineMemory();  // waits for the engine's stream
  EngineMemory(const EngineMemory &) = delete;
  EngineMemory &operator=(const EngineMemory &) = delete;

  bool on_device() const { return device_ != nullptr; }
  Device *device() const { return device_; }
  // The pool of place; Shared only once share() succeeded.
  Pool &pool(Place place);

  // Collective over the engine's communicator: one window of bytes (whole pages) that
  // every rank of the node maps (zrt_comm_mem_alloc's memory), carved by a pool of its own
  // (listed with the context's pools, handle and stats), which Place::Shared allocates
  // from. Fails on every rank together, with nothing changed: the buffers then stay
  // private. The window itself goes with the communicator, after this object.
  void share(CommMemory &comm_memory, size_t bytes);
  bool shared() const { return shared_ != nullptr; }
  int shared_peers() const { return shared_peers_; }  // ranks mapping the window; 0: none
  // Shared buffers asked for that went to host memory instead (the window was full).
  uint64_t shared_fallbacks() const { return shared_fallbacks_; }
  void note_shared_fallback() { ++shared_fallbacks_; }

  // Sets bytes at p to 0: on the engine's stream for device memory, at once otherwise.
  void zero(Place place, void *p, size_t bytes);
  // Copies between any places: on the engine's stream when device memory takes part, at
  // once otherwise. The buffers must stay valid until the copy is done (synchronize).
  void copy(void *dst, const void *src, size_t bytes);
  // The host waits for the engine's stream (no-op on the host).
  void synchronize();

  // ZeRO-Offload's copies between device and pinned host memory: copy() timed on the
  // engine's stream, and the host's waits for them, so that a step can report how much of
  // the copying nothing hid (the step report's offload times).
  void offload_copy(void *dst, const void *src, size_t bytes);
  void offload_synchronize();
  struct OffloadTimes {
    double copy_seconds = 0;     // the stream's time on the offload copies
    double exposed_seconds = 0;  // the host's time waiting in offload_synchronize
  };
  // The times since the last call; the copies must be complete (offload_synchronize).
  OffloadTimes take_offload_times();
  // An event that completes after the engine's work so far (not the program's); empty on
  // the host.
  Event recorded();
  // The program's later work waits for the engine's work so far.
  void program_waits();
  // An event that completes after the program's work so far and the engine's (what a
  // collective on engine buffers must wait for); empty on the host.
  Event ready();
  void set_program_stream(void *native);

  // The engine's stream and its kernels: only with on_device().
  Stream &stream() { return *stream_; }
  DeviceKernels &kernels() { return *kernels_; }

 private:
  Context &context_;
  Device *device_ = nullptr;
  std::unique_ptr<Stream> stream_, program_;
  std::unique_ptr<DeviceKernels> kernels_;
  std::vector<std::pair<Event, Event>> offload_copies_;  // start, end
  double offload_exposed_ = 0;
  PoolEntry *shared_ = nullptr;  // the window's pool, destroyed with this
  int shared_peers_ = 0;
  uint64_t shared_fallbacks_ = 0;
};

}  // namespace zrt
