// The field tables of memory.h's structs (runtime/field_table.hpp): the params of
// zrt_pool_create and zrt_offload_create, the stats of pools and offload engines, and the
// context's memory limit.
#pragma once

#include "memory/memory_part.hpp"
#include "memory/offload.hpp"
#include "memory/pool.hpp"
#include "runtime/field_table.hpp"
#include "zerort/memory.h"

namespace zrt {

// What zrt_pool_create takes from zrt_pool_params_t.
struct PoolRequest {
  MemorySpace space = MemorySpace::Host;
  PoolOverrides overrides;
};

// What zrt_offload_create takes from zrt_offload_params_t; memory is the context's part (a
// pool of another context is refused), options start as the configuration's.
struct OffloadRequest {
  MemoryPart *memory = nullptr;
  OffloadOptions options;
  Pool *ring_pool = nullptr;  // nullptr: the context's pinned host pool
};

const ParamTable<zrt_pool_params_t, PoolRequest> &pool_params_table();
const ReportTable<zrt_pool_stats_t, PoolStats> &pool_stats_table();
const ParamTable<zrt_offload_params_t, OffloadRequest> &offload_params_table();
const ReportTable<zrt_offload_stats_t, OffloadStats> &offload_stats_table();
const ReportTable<zrt_memory_limit_t, MemoryPart::Room> &memory_limit_table();

}  // namespace zrt
