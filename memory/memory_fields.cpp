#include "memory/memory_fields.hpp"

namespace zrt {

namespace {

using Keys = std::map<std::string, std::string>;
using PoolParams = zrt_pool_params_t;
using Stats = zrt_pool_stats_t;
using OffloadParams = zrt_offload_params_t;
using OStats = zrt_offload_stats_t;
using Limit = zrt_memory_limit_t;
using Room = MemoryPart::Room;

static_assert(static_cast<int>(MemoryLimitKind::Physical) == ZRT_MEMORY_LIMIT_PHYSICAL &&
              static_cast<int>(MemoryLimitKind::Cgroup) == ZRT_MEMORY_LIMIT_CGROUP &&
              static_cast<int>(MemoryLimitKind::AddressSpace) == ZRT_MEMORY_LIMIT_ADDRESS_SPACE &&
              static_cast<int>(MemoryLimitKind::Data) == ZRT_MEMORY_LIMIT_DATA);

const ParamTable<PoolParams, PoolRequest> kPoolParams{
    "zrt_pool_params_field",
    "params",
    {
        {ZRT_POOL_PARAM_FIELD_SPACE, "space", nullptr, nullptr,
         [](const PoolParams &p, Keys &, PoolRequest &r) {
           r.space = space_from_c(p.space, "params->space");
         }},
        {ZRT_POOL_PARAM_FIELD_LIMIT_BYTES, "limit_bytes", "memory.{space}.limit", nullptr,
         [](const PoolParams &p, Keys &, PoolRequest &r) {
           if (p.limit_bytes == 0)
             fail(ZRT_ERR_INVALID_ARGUMENT, "params->limit_bytes is 0: a pool needs memory");
           r.overrides.limit = p.limit_bytes;
         }},
        {ZRT_POOL_PARAM_FIELD_SEGMENT_BYTES, "segment_bytes", "memory.{space}.segment_bytes",
         nullptr,
         [](const PoolParams &p, Keys &, PoolRequest &r) {
           if (p.segment_bytes == 0)
             fail(ZRT_ERR_INVALID_ARGUMENT,
                  "params->segment_bytes is 0: a pool grows by whole segments");
           r.overrides.segment_bytes = p.segment_bytes;
         }},
        {ZRT_POOL_PARAM_FIELD_ALIGNMENT, "alignment", "memory.alignment", nullptr,
         [](const PoolParams &p, Keys &, PoolRequest &r) { r.overrides.alignment = p.alignment; }},
        {ZRT_POOL_PARAM_FIELD_COMPACT, "compact", "memory.compact", nullptr,
         [](const PoolParams &p, Keys &, PoolRequest &r) {
           r.overrides.compact = compact_from_c(p.compact, "params->compact");
         }},
        {ZRT_POOL_PARAM_FIELD_NAME, "name", nullptr, nullptr,
         [](const PoolParams &p, Keys &, PoolRequest &r) {
           require_nonnull(p.name, "params->name");
           r.overrides.name = std::string(p.name);
         }},
    }};

const ReportTable<Stats, PoolStats> kPoolStats{
    "zrt_pool_stats_field",
    "stats_p",
    {
        {ZRT_POOL_STATS_FIELD_SPACE, "space",
         [](const PoolStats &s, Stats &o) {
           o.space = static_cast<zrt_memory_space_t>(static_cast<int>(s.space));
         }},
        {ZRT_POOL_STATS_FIELD_LIMIT, "limit_bytes",
         [](const PoolStats &s, Stats &o) { o.limit_bytes = s.limit; }},
        {ZRT_POOL_STATS_FIELD_RESERVED, "reserved_bytes, peak_reserved_bytes",
         [](const PoolStats &s, Stats &o) {
           o.reserved_bytes = s.reserved;
           o.peak_reserved_bytes = s.peak_reserved;
         }},
        {ZRT_POOL_STATS_FIELD_LIVE, "live_bytes, peak_live_bytes, allocations, movable_allocations",
         [](const PoolStats &s, Stats &o) {
           o.live_bytes = s.live;
           o.peak_live_bytes = s.peak_live;
           o.allocations = s.allocations;
           o.movable_allocations = s.movable_allocations;
         }},
        {ZRT_POOL_STATS_FIELD_FREE, "free_bytes, largest_free_bytes, fragmentation",
         [](const PoolStats &s, Stats &o) {
           o.free_bytes = s.free;
           o.largest_free_bytes = s.largest_free;
           o.fragmentation = s.fragmentation;
         }},
        {ZRT_POOL_STATS_FIELD_COMPACTION, "compactions, moved_bytes, generation",
         [](const PoolStats &s, Stats &o) {
           o.compactions = s.compactions;
           o.moved_bytes = s.moved_bytes;
           o.generation = s.generation;
         }},
        {ZRT_POOL_STATS_FIELD_FAILURES, "out_of_memory_count",
         [](const PoolStats &s, Stats &o) { o.out_of_memory_count = s.out_of_memory; }},
        {ZRT_POOL_STATS_FIELD_PLACEMENT, "page_locked, numa_node, segments",
         [](const PoolStats &s, Stats &o) {
           o.page_locked = s.page_locked ? 1 : 0;
           o.numa_node = s.numa_node;
           o.segments = s.segments;
         }},
        {ZRT_POOL_STATS_FIELD_THREAD_CACHE, "thread_cached_bytes",
         [](const PoolStats &s, Stats &o) { o.thread_cached_bytes = s.thread_cached; }},
    }};

const ParamTable<OffloadParams, OffloadRequest> kOffloadParams{
    "zrt_offload_params_field",
    "params",
    {
        {ZRT_OFFLOAD_PARAM_FIELD_RING_BYTES, "ring_bytes", "offload.ring_bytes", nullptr,
         [](const OffloadParams &p, Keys &, OffloadRequest &r) {
           r.options.ring_bytes = p.ring_bytes;
           r.options.ring_key = "params->ring_bytes";
         }},
        {ZRT_OFFLOAD_PARAM_FIELD_PREFETCH_DEPTH, "prefetch_depth", "offload.prefetch_depth",
         nullptr,
         [](const OffloadParams &p, Keys &, OffloadRequest &r) {
           r.options.prefetch_depth = p.prefetch_depth;
         }},
        {ZRT_OFFLOAD_PARAM_FIELD_POOL, "pool", nullptr, nullptr,
         [](const OffloadParams &p, Keys &, OffloadRequest &r) {
           PoolEntry &e = pool_table().get(handle_value(p.pool), "params->pool");
           if (e.part != r.memory)
             fail(ZRT_ERR_INVALID_ARGUMENT, "params->pool belongs to another context");
           r.ring_pool = e.pool.get();
         }},
    }};

const ReportTable<OStats, OffloadStats> kOffloadStats{
    "zrt_offload_stats_field",
    "stats_p",
    {
        {ZRT_OFFLOAD_STATS_FIELD_COUNTS, "pushes, fetches, discards, prefetches, tokens",
         [](const OffloadStats &s, OStats &o) {
           o.pushes = s.pushes;
           o.fetches = s.fetches;
           o.discards = s.discards;
           o.prefetches = s.prefetches;
           o.tokens = s.tokens;
         }},
        {ZRT_OFFLOAD_STATS_FIELD_BYTES,
         "ring_bytes, ring_used_bytes, offloaded_bytes, peak_offloaded_bytes, "
         "device_bytes_saved, peak_device_bytes_saved",
         [](const OffloadStats &s, OStats &o) {
           o.ring_bytes = s.ring_bytes;
           o.ring_used_bytes = s.ring_used;
           o.offloaded_bytes = s.offloaded;
           o.peak_offloaded_bytes = s.peak_offloaded;
           o.device_bytes_saved = s.device_saved;
           o.peak_device_bytes_saved = s.peak_device_saved;
         }},
        {ZRT_OFFLOAD_STATS_FIELD_TIMES, "copy_seconds, exposed_seconds",
         [](const OffloadStats &s, OStats &o) {
           o.copy_seconds = s.copy_seconds;
           o.exposed_seconds = s.exposed_seconds;
         }},
        {ZRT_OFFLOAD_STATS_FIELD_ENGINE, "engine",
         [](const OffloadStats &s, OStats &o) { o.engine = s.engine; }},
    }};

const ReportTable<Limit, Room> kMemoryLimit{
    "zrt_memory_limit_field",
    "limit_p",
    {
        {ZRT_MEMORY_LIMIT_FIELD_LIMIT, "kind, limit_bytes, sharing_ranks",
         [](const Room &r, Limit &o) {
           o.kind = static_cast<zrt_memory_limit_kind_t>(static_cast<int>(r.limit.kind));
           o.limit_bytes = r.limit.bytes;
           o.sharing_ranks = r.limit.sharing_ranks;
         }},
        {ZRT_MEMORY_LIMIT_FIELD_USE, "used_bytes, available_bytes",
         [](const Room &r, Limit &o) {
           o.used_bytes = used_under(r.limit, r.usage);
           o.available_bytes = r.bytes;
         }},
    }};

}  // namespace

const ParamTable<PoolParams, PoolRequest> &pool_params_table() {
  return kPoolParams;
}
const ReportTable<Stats, PoolStats> &pool_stats_table() {
  return kPoolStats;
}
const ParamTable<OffloadParams, OffloadRequest> &offload_params_table() {
  return kOffloadParams;
}
const ReportTable<OStats, OffloadStats> &offload_stats_table() {
  return kOffloadStats;
}
const ReportTable<Limit, Room> &memory_limit_table() {
  return kMemoryLimit;
}

}  // namespace zrt
