#include "memory/memory_part.hpp"

#include <atomic>

#include "memory/cuda/cuda_device.hpp"
#include "memory/cuda/cuda_memory.hpp"
#include "memory/emulated/emulated_device.hpp"
#include "memory/host_resource.hpp"
#include "memory/pinned_host_resource.hpp"
#include "memory/thread_copy_engine.hpp"
#include "runtime/agree.hpp"
#include "runtime/format_bytes.hpp"
#include "runtime/log.hpp"

namespace zrt {

namespace {

const bool registered = register_context_part(
    10, [](Context &context) { return std::make_unique<MemoryPart>(context); });

// Segments of CUDA spaces are separate cudaMalloc / cudaHostAlloc calls: too small and
// the pool degenerates into one driver call per allocation.
constexpr size_t kMinCudaSegment = size_t{64} << 20;

std::string key(MemorySpace space, const char *field) {
  return fmt::format("memory.{}.{}", space_name(space), field);
}

// FNV-1a: the same text gives the same number on every rank.
uint64_t text_hash(const std::string &text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

// The limits of this process, with the ranks of the context on its node that are under each:
// the node's for physical memory, those in the same cgroup for a cgroup's. Collective.
std::vector<MemoryLimit> shared_limits(const Context &context) {
  std::vector<MemoryLimit> limits = discover_memory_limits(LimitSources::current());
  std::string cgroups;
  for (const MemoryLimit &l : limits)
    if (l.kind == MemoryLimitKind::Cgroup) cgroups += l.file + "\n";
  const NodeLayout &layout = context.topology().layout();
  const uint64_t mine[2] = {static_cast<uint64_t>(layout.node_id), text_hash(cgroups)};
  std::vector<uint64_t> all(2 * static_cast<size_t>(context.size()));
  watched_allgather(context.comm(), mine, 2, MPI_UINT64_T, all.data(),
                    "all-gather of the ranks' memory cgroups");
  int same_cgroup = 0;
  for (size_t r = 0; r < all.size(); r += 2)
    same_cgroup += all[r] == mine[0] && all[r + 1] == mine[1] ? 1 : 0;
  for (MemoryLimit &l : limits) {
    if (l.kind == MemoryLimitKind::Physical) l.sharing_ranks = std::max(1, layout.local_size);
    if (l.kind == MemoryLimitKind::Cgroup) l.sharing_ranks = std::max(1, same_cgroup);
  }
  return limits;
}

}  // namespace

ObjectTable<PoolEntry> &pool_table() {
  static ObjectTable<PoolEntry> table("pool", 0x50);
  return table;
}

ObjectTable<OffloadEntry> &offload_table() {
  static ObjectTable<OffloadEntry> table("offload engine", 0x4f);
  return table;
}

MemoryPart::MemoryPart(Context &context) : context_(context), limits_(shared_limits(context)) {
  (void)registered;
  if (context.rank() == 0)
    for (const MemoryLimit &l : limits_)
      log::debug("memory limit: {}", describe_limit(l));
}

MemoryPart::Room MemoryPart::host_room() const {
  Room r;
  r.usage = read_process_usage();
  r.limit = tightest_limit(limits_, r.usage);
  r.bytes = room_under(r.limit, r.usage);
  return r;
}

MemoryPart::~MemoryPart() {
  // Engines first: they wait for their copies and free their rings into the pools.
  auto drop_offload = [](std::unique_ptr<OffloadEntry> &e) {
    if (!e) return;
    offload_table().remove(e->handle);
    e.reset();
  };
  for (auto &e : user_offloads_)
    drop_offload(e);
  drop_offload(offload_);
  auto drop_pool = [](std::unique_ptr<PoolEntry> &e) {
    if (!e) return;
    PoolStats s = e->pool->stats();
    if (s.allocations > 0)
      log::warn(
          "pool '{}': {} allocation(s) of {} still live at zrt_finalize; their memory is "
          "released with the pool",
          e->pool->name(), s.allocations, format_bytes(s.live));
    pool_table().remove(e->handle);
    e.reset();
  };
  for (auto &e : user_pools_)
    drop_pool(e);
  for (auto &e : pools_)
    drop_pool(e);
}

int MemoryPart::cuda_device() const {
  const Topology &t = context_.topology();
  if (t.gpu() >= 0 && t.gpus()[static_cast<size_t>(t.gpu())].cuda_index >= 0)
    return t.gpus()[static_cast<size_t>(t.gpu())].cuda_index;
  return 0;
}

std::unique_ptr<Resource> MemoryPart::make_resource(MemorySpace space) const {
  std::string why;
  switch (space) {
    case MemorySpace::Host:
      return std::make_unique<HostResource>();
    case MemorySpace::PinnedHost: {
      if (auto r = make_cuda_pinned_resource(cuda_device(), &why)) return r;
      PinnedHostOptions o;
      o.topology = context_.topology().hwloc();
      o.numa_node = context_.topology().numa_node();
      return std::make_unique<PinnedHostResource>(o);
    }
    case MemorySpace::Device:
      if (Device *d = device(&why)) return d->make_resource();
      fail(ZRT_ERR_NOT_SUPPORTED, "memory space ZRT_MEMORY_DEVICE is not available: {}", why);
  }
  fail(ZRT_ERR_INTERNAL, "unknown memory space");
}

Device *MemoryPart::device(std::string *why) const {
  std::lock_guard lock(device_mutex_);
  if (!device_made_) {
    device_made_ = true;
    if (context_.config().get_bool("memory.device.emulate")) {
      device_ = make_emulated_device();
    } else {
      device_ = make_cuda_device(cuda_device(), &device_missing_);
      if (!device_)
        device_missing_ +=
            " (memory.device.emulate = true runs the device paths on an "
            "emulated device)";
    }
  }
  if (!device_ && why != nullptr) *why = device_missing_;
  return device_.get();
}

std::unique_ptr<CopyEngine> MemoryPart::make_copy_engine() const {
  std::string why;
  if (auto e = make_cuda_copy_engine(cuda_device(), &why)) return e;
  // The copy thread inherits this rank's binding; on a single processing unit it can only
  // take turns with the rank's compute.
  static std::atomic<bool> warned{false};
  if (context_.topology().bound_pus() == 1 && !warned.exchange(true))
    log::warn(
        "activation offload: this rank is bound to one processing unit, which the copy "
        "thread shares, so copies cannot overlap compute; give each rank two or more "
        "(e.g. mpirun --bind-to none, or --map-by slot:PE=2)");
  return std::make_unique<ThreadCopyEngine>();
}

PoolOptions MemoryPart::default_options(MemorySpace space) const {
  const Config &c = context_.config();
  PoolOptions o;
  o.name = space_name(space);
  o.limit_key = key(space, "limit");
  o.limit = static_cast<size_t>(c.get_int(o.limit_key));
  o.segment_bytes = static_cast<size_t>(c.get_int(key(space, "segment_bytes")));
  o.alignment = static_cast<size_t>(c.get_int("memory.alignment"));
  o.compact = compact_from_name(c.get_string("memory.compact"));
  o.thread_cache_bytes = static_cast<size_t>(c.get_int("memory.thread_cache_bytes"));
  if (o.limit == 0) {
    // What the process may use, at the time the pool is made: under RLIMIT_AS a pool's
    // reservation counts whole, so the pools made earlier leave less to the later ones.
    const PoolLimit host = default_pool_limit(limits_, read_process_usage(),
                                              limit_headroom(context_.topology().bound_pus()));
    const size_t floor = size_t{64} << 20;  // below this a pool is useless; mmap decides
    switch (space) {
      case MemorySpace::Host:
        o.limit = std::max(host.bytes, floor);
        o.limit_key += " = 0: by default " + host.why;
        break;
      case MemorySpace::PinnedHost:
        o.limit = std::max(host.bytes / 2, floor);
        o.limit_key += " = 0: by default half of " + host.why;
        break;
      case MemorySpace::Device:
        // The emulated device reserves address space only: half of the host's, as a GPU
        // has less memory than its host.
        if (c.get_bool("memory.device.emulate")) {
          o.limit = std::max(host.bytes / 2, floor);
          o.limit_key += " = 0: by default half of " + host.why;
        } else {
          o.limit = cuda_device_memory(cuda_device());
        }
        if (o.limit == 0) o.limit = size_t{1} << 30;  // unused: no device, creation fails
        break;
    }
  }
  return o;
}

OffloadOptions MemoryPart::default_offload_options() const {
  const Config &c = context_.config();
  OffloadOptions o;
  o.ring_bytes = static_cast<size_t>(c.get_int("offload.ring_bytes"));
  o.prefetch_depth = static_cast<int>(c.get_int("offload.prefetch_depth"));
  o.ring_key = "offload.ring_bytes";
  return o;
}

std::unique_ptr<PoolEntry> MemoryPart::new_pool(MemorySpace space, const PoolOverrides &overrides,
                                                bool context_owned) {
  PoolOptions o = default_options(space);
  if (overrides.limit) {
    o.limit = *overrides.limit;
    o.limit_key.clear();
  }
  if (overrides.segment_bytes) o.segment_bytes = *overrides.segment_bytes;
  if (overrides.alignment) o.alignment = *overrides.alignment;
  if (overrides.compact) o.compact = *overrides.compact;
  if (overrides.name) o.name = *overrides.name;
  std::unique_ptr<Resource> resource = make_resource(space);
  if (!resource->reserves()) o.segment_bytes = std::max(o.segment_bytes, kMinCudaSegment);
  return new_pool(std::move(resource), std::move(o), context_owned);
}

std::unique_ptr<PoolEntry> MemoryPart::new_pool(std::unique_ptr<Resource> resource, PoolOptions o,
                                                bool context_owned) {
  auto entry = std::make_unique<PoolEntry>();
  log::debug("pool '{}': limit {}{}", o.name, format_bytes(o.limit),
             o.limit_key.empty() ? "" : " (" + o.limit_key + ")");
  entry->pool = std::make_unique<Pool>(std::move(resource), std::move(o));
  entry->part = this;
  entry->context_owned = context_owned;
  entry->handle = pool_table().insert(entry.get());
  entry->pool->set_handle(entry->handle);
  return entry;
}

PoolEntry &MemoryPart::pool_entry(MemorySpace space) {
  std::lock_guard lock(mutex_);
  auto &slot = pools_[static_cast<size_t>(space)];
  if (!slot) slot = new_pool(space, {}, true);
  return *slot;
}

Pool &MemoryPart::pool(MemorySpace space) {
  return *pool_entry(space).pool;
}

PoolEntry &MemoryPart::create_pool(MemorySpace space, const PoolOverrides &overrides) {
  return add_user_pool(new_pool(space, overrides, false));
}

PoolEntry &MemoryPart::create_pool(std::unique_ptr<Resource> resource, PoolOptions options) {
  return add_user_pool(new_pool(std::move(resource), std::move(options), false));
}

PoolEntry &MemoryPart::add_user_pool(std::unique_ptr<PoolEntry> entry) {
  std::lock_guard lock(mutex_);
  try {
    user_pools_.push_back(std::move(entry));
  } catch (...) {
    pool_table().remove(entry->handle);
    throw;
  }
  return *user_pools_.back();
}

void MemoryPart::destroy_pool(PoolEntry &entry) {
  if (entry.context_owned)
    fail(ZRT_ERR_INVALID_ARGUMENT,
         "pool '{}' belongs to the context (zrt_context_pool); zrt_finalize destroys it",
         entry.pool->name());
  std::lock_guard lock(mutex_);
  PoolStats s = entry.pool->stats();
  if (s.allocations > 0)
    fail(ZRT_ERR_INVALID_STATE,
         "pool '{}' still has {} live allocation(s) of {}; free them before destroying it",
         entry.pool->name(), s.allocations, format_bytes(s.live));
  // An offload engine whose ring lives in this pool counts as a live allocation above.
  for (auto it = user_pools_.begin(); it != user_pools_.end(); ++it) {
    if (it->get() != &entry) continue;
    pool_table().remove(entry.handle);
    user_pools_.erase(it);
    return;
  }
  fail(ZRT_ERR_INTERNAL, "pool '{}' is not registered with its context", entry.pool->name());
}

std::unique_ptr<OffloadEntry> MemoryPart::new_offload(OffloadOptions options, Pool *ring_pool,
                                                      bool context_owned) {
  Pool &ring = ring_pool != nullptr ? *ring_pool : pool(MemorySpace::PinnedHost);
  auto entry = std::make_unique<OffloadEntry>();
  entry->offload = std::make_unique<Offload>(
      ring,
      [this](MemorySpace source) -> Pool & {
        return pool(source == MemorySpace::Device ? MemorySpace::Device : MemorySpace::Host);
      },
      make_copy_engine(), std::move(options));
  entry->part = this;
  entry->context_owned = context_owned;
  entry->handle = offload_table().insert(entry.get());
  return entry;
}

OffloadEntry &MemoryPart::offload_entry() {
  {
    std::lock_guard lock(mutex_);
    if (offload_) return *offload_;
  }
  // Created outside the lock: it takes the pinned pool through pool(), which locks.
  std::unique_ptr<OffloadEntry> made = new_offload(default_offload_options(), nullptr, true);
  std::lock_guard lock(mutex_);
  if (!offload_) {
    offload_ = std::move(made);
  } else {
    offload_table().remove(made->handle);  // another thread won the race
  }
  return *offload_;
}

OffloadEntry &MemoryPart::create_offload(OffloadOptions options, Pool *ring_pool) {
  std::unique_ptr<OffloadEntry> entry = new_offload(std::move(options), ring_pool, false);
  std::lock_guard lock(mutex_);
  try {
    user_offloads_.push_back(std::move(entry));
  } catch (...) {
    offload_table().remove(entry->handle);
    throw;
  }
  return *user_offloads_.back();
}

void MemoryPart::destroy_offload(OffloadEntry &entry) {
  if (entry.context_owned)
    fail(ZRT_ERR_INVALID_ARGUMENT,
         "the offload engine belongs to the context (zrt_context_offload); zrt_finalize "
         "destroys it");
  std::lock_guard lock(mutex_);
  for (auto it = user_offloads_.begin(); it != user_offloads_.end(); ++it) {
    if (it->get() != &entry) continue;
    offload_table().remove(entry.handle);
    user_offloads_.erase(it);
    return;
  }
  fail(ZRT_ERR_INTERNAL, "offload engine is not registered with its context");
}

void MemoryPart::describe(nlohmann::json &out) const {
  // Collect under the lock, describe outside it: an offload engine's prefetch holds its
  // own lock while it asks this part for a staging pool, so the two locks must never be
  // taken in the other order.
  std::vector<Pool *> pools;
  Offload *offload = nullptr;
  size_t user_pools = 0, user_offloads = 0;
  {
    std::lock_guard lock(mutex_);
    for (const auto &e : pools_)
      if (e) pools.push_back(e->pool.get());
    if (offload_) offload = offload_->offload.get();
    user_pools = user_pools_.size();
    user_offloads = user_offloads_.size();
  }
  nlohmann::json j = nlohmann::json::object();
  for (Pool *p : pools)
    j[p->name()] = p->describe();
  std::string why;
  Device *d = device(&why);
  nlohmann::json device =
      d != nullptr
          ? nlohmann::json{{"kind", d->kind()}, {"index", d->index()}, {"describe", d->describe()}}
          : nlohmann::json{{"missing", why}};
  nlohmann::json limits = nlohmann::json::array();
  const ProcessUsage usage = read_process_usage();
  for (const MemoryLimit &l : limits_)
    limits.push_back({{"limit", describe_limit(l)},
                      {"bytes", l.bytes},
                      {"sharing_ranks", l.sharing_ranks},
                      {"used_bytes", used_under(l, usage)},
                      {"available_bytes", room_under(l, usage)}});
  out["memory"] = {{"limits", limits},
                   {"device", device},
                   {"pools", j},
                   {"user_pools", user_pools},
                   {"offload", offload != nullptr ? offload->describe() : nlohmann::json()},
                   {"user_offload_engines", user_offloads}};
}

}  // namespace zrt
