// The memory layer's share of a context: one pool per memory space (created on first
// use from the configuration), the pools and offload engines made through the C API, and
// the context's own offload engine. All of it is destroyed with the context, offload
// engines first (they wait for their copies and hold pinned memory from a pool).
//
// This is also the interface the layers above use to allocate:
//
//   MemoryPart &memory = context.part<MemoryPart>();
//   Pool &host = memory.pool(MemorySpace::Host);
//   PoolBuffer master = PoolBuffer::allocate(host, bytes, Lifetime::Long);  // movable
//   PoolAllocation bucket = PoolAllocation::allocate(host, bytes, Lifetime::Transient);
//
// (see memory/pool_buffer.hpp and HACKING.md).
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "memory/copy_engine.hpp"
#include "memory/device.hpp"
#include "memory/memory_limits.hpp"
#include "memory/object_table.hpp"
#include "memory/offload.hpp"
#include "memory/pool.hpp"
#include "runtime/runtime_context.hpp"

namespace zrt {

class MemoryPart;

// What a zrt_pool_h stands for.
struct PoolEntry {
  std::unique_ptr<Pool> pool;
  MemoryPart *part = nullptr;
  bool context_owned = false;
  uintptr_t handle = 0;
};

// What a zrt_offload_h stands for.
struct OffloadEntry {
  std::unique_ptr<Offload> offload;
  MemoryPart *part = nullptr;
  bool context_owned = false;
  uintptr_t handle = 0;
};

ObjectTable<PoolEntry> &pool_table();
ObjectTable<OffloadEntry> &offload_table();

// Settings of a new pool that differ from the configuration's; unset ones take it.
struct PoolOverrides {
  std::optional<size_t> limit, segment_bytes, alignment;
  std::optional<CompactPolicy> compact;
  std::optional<std::string> name;
};

class MemoryPart final : public ContextPart {
 public:
  explicit MemoryPart(Context &context);
  ~MemoryPart() override;

  static constexpr const char *kPartName = "memory";
  const char *name() const override { return kPartName; }
  void describe(nlohmann::json &out) const override;

  // The context's pool of `space`, created on first use. Throws
  // Error(ZRT_ERR_NOT_SUPPORTED) for Device when this build or node has no GPU.
  // Thread-safe; the reference stays valid until zrt_finalize.
  Pool &pool(MemorySpace space);
  PoolEntry &pool_entry(MemorySpace space);
  // The context's offload engine, created on first use (offload.* configuration).
  OffloadEntry &offload_entry();
  Offload &offload() { return *offload_entry().offload; }

  // A new pool or engine owned by this part, with a handle (zrt_pool_create,
  // zrt_offload_create), and their destruction (checked: live allocations, ownership).
  PoolEntry &create_pool(MemorySpace space, const PoolOverrides &overrides);
  // The same over a resource the caller made (memory/borrowed_resource.hpp: the engine's
  // node-shared window), with its options as given: listed and reachable by handle like
  // the pools of zrt_pool_create, destroyed with destroy_pool.
  PoolEntry &create_pool(std::unique_ptr<Resource> resource, PoolOptions options);
  void destroy_pool(PoolEntry &entry);
  // ring_pool: nullptr for the context's pinned pool.
  OffloadEntry &create_offload(OffloadOptions options, Pool *ring_pool);
  void destroy_offload(OffloadEntry &entry);

  // The configuration's options for a pool of `space`.
  PoolOptions default_options(MemorySpace space) const;
  OffloadOptions default_offload_options() const;
  // A fresh resource of `space` for this rank (its GPU, its NUMA node).
  std::unique_ptr<Resource> make_resource(MemorySpace space) const;
  std::unique_ptr<CopyEngine> make_copy_engine() const;
  int cuda_device() const;
  // The rank's device (memory/device.hpp), made on first use: the emulated one with
  // memory.device.emulate, else its CUDA GPU. nullptr when there is none, with the reason
  // in *why. Thread-safe; the device lives until zrt_finalize.
  Device *device(std::string *why = nullptr) const;

  // What bounds this rank's host memory (memory/memory_limits.hpp), read at zrt_init, each
  // with the ranks of the context on this node under it.
  const std::vector<MemoryLimit> &limits() const { return limits_; }
  // The limit that leaves this rank the least room now, and what the process uses now.
  struct Room {
    MemoryLimit limit;
    ProcessUsage usage;
    size_t bytes = 0;  // room_under(limit, usage)
  };
  Room host_room() const;

 private:
  std::unique_ptr<PoolEntry> new_pool(MemorySpace space, const PoolOverrides &overrides,
                                      bool context_owned);
  std::unique_ptr<PoolEntry> new_pool(std::unique_ptr<Resource> resource, PoolOptions options,
                                      bool context_owned);
  PoolEntry &add_user_pool(std::unique_ptr<PoolEntry> entry);
  std::unique_ptr<OffloadEntry> new_offload(OffloadOptions options, Pool *ring_pool,
                                            bool context_owned);

  Context &context_;
  std::vector<MemoryLimit> limits_;
  // Made on first use (device()); destroyed after every pool and engine (declared first).
  mutable std::unique_ptr<Device> device_;
  mutable std::mutex mutex_;
  std::array<std::unique_ptr<PoolEntry>, kMemorySpaces> pools_;
  mutable std::mutex device_mutex_;  // device() is called with mutex_ held (new_pool)
  mutable bool device_made_ = false;
  mutable std::string device_missing_;  // why device() is nullptr
  std::unique_ptr<OffloadEntry> offload_;
  std::vector<std::unique_ptr<PoolEntry>> user_pools_;
  std::vector<std::unique_ptr<OffloadEntry>> user_offloads_;
};

}  // namespace zrt
