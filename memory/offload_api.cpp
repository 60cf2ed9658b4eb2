// The C entry points of zerort/memory.h for activation offload.
#include "memory/memory_part.hpp"
#include "zerort/memory.h"

using namespace zrt;

namespace {

Offload &offload_from(zrt_offload_h offload) {
  return *offload_table().get(handle_value(offload), "offload").offload;
}

uint64_t token_value(zrt_offload_token_h token) {
  return handle_value(token);
}

}  // namespace

extern "C" {

ZRT_API zrt_status_t zrt_context_offload(zrt_context_h context, zrt_offload_h *offload_p) {
  return abi_call("zrt_context_offload", [&] {
    Context &c = context_from(context);
    require_nonnull(offload_p, "offload_p");
    *offload_p = to_handle<zrt_offload_h>(c.part<MemoryPart>().offload_entry().handle);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_offload_create(zrt_context_h context, const zrt_offload_params_t *params,
                                        zrt_offload_h *offload_p) {
  return abi_call("zrt_offload_create", [&] {
    Context &c = context_from(context);
    require_nonnull(offload_p, "offload_p");
    MemoryPart &memory = c.part<MemoryPart>();
    OffloadOptions o = memory.default_offload_options();
    Pool *ring_pool = nullptr;
    if (params != nullptr) {
      const uint64_t known = ZRT_OFFLOAD_PARAM_FIELD_RING_BYTES |
                             ZRT_OFFLOAD_PARAM_FIELD_PREFETCH_DEPTH | ZRT_OFFLOAD_PARAM_FIELD_POOL;
      if (params->field_mask & ~known)
        fail(ZRT_ERR_INVALID_ARGUMENT,
             "params->field_mask has unknown bits 0x{:x} (a header newer than the library?)",
             params->field_mask & ~known);
      if (params->field_mask & ZRT_OFFLOAD_PARAM_FIELD_RING_BYTES) {
        o.ring_bytes = params->ring_bytes;
        o.ring_key = "params->ring_bytes";
      }
      if (params->field_mask & ZRT_OFFLOAD_PARAM_FIELD_PREFETCH_DEPTH)
        o.prefetch_depth = params->prefetch_depth;
      if (params->field_mask & ZRT_OFFLOAD_PARAM_FIELD_POOL) {
        PoolEntry &e = pool_table().get(handle_value(params->pool), "params->pool");
        if (e.part != &memory)
          fail(ZRT_ERR_INVALID_ARGUMENT, "params->pool belongs to another context");
        ring_pool = e.pool.get();
      }
    }
    *offload_p = to_handle<zrt_offload_h>(memory.create_offload(std::move(o), ring_pool).handle);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_offload_destroy(zrt_offload_h offload) {
  return abi_call("zrt_offload_destroy", [&] {
    OffloadEntry &e = offload_table().get(handle_value(offload), "offload");
    e.part->destroy_offload(e);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_offload_push(zrt_offload_h offload, const void *src, size_t bytes,
                                      zrt_offload_token_h *token_p) {
  return abi_call("zrt_offload_push", [&] {
    Offload &o = offload_from(offload);
    require_nonnull(token_p, "token_p");
    *token_p = to_handle<zrt_offload_token_h>(o.push(src, bytes));
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_offload_test(zrt_offload_h offload, zrt_offload_token_h token) {
  return abi_call("zrt_offload_test", [&] {
    return offload_from(offload).test(token_value(token)) ? ZRT_SUCCESS : ZRT_IN_PROGRESS;
  });
}

ZRT_API zrt_status_t zrt_offload_wait(zrt_offload_h offload, zrt_offload_token_h token) {
  return abi_call("zrt_offload_wait", [&] {
    offload_from(offload).wait(token_value(token));
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_offload_prefetch(zrt_offload_h offload, zrt_offload_token_h token) {
  return abi_call("zrt_offload_prefetch", [&] {
    offload_from(offload).prefetch(token_value(token));
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_offload_prefetch_into(zrt_offload_h offload, zrt_offload_token_h token,
                                               void *dst) {
  return abi_call("zrt_offload_prefetch_into", [&] {
    offload_from(offload).prefetch_into(token_value(token), dst);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_offload_fetch(zrt_offload_h offload, zrt_offload_token_h token,
                                       void *dst) {
  return abi_call("zrt_offload_fetch", [&] {
    offload_from(offload).fetch(token_value(token), dst);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_offload_discard(zrt_offload_h offload, zrt_offload_token_h token) {
  return abi_call("zrt_offload_discard", [&] {
    offload_from(offload).discard(token_value(token));
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_offload_stats(zrt_offload_h offload, zrt_offload_stats_t *stats) {
  return abi_call("zrt_offload_stats", [&] {
    Offload &o = offload_from(offload);
    require_nonnull(stats, "stats");
    uint64_t m = stats->field_mask;
    if (m & ~uint64_t{ZRT_OFFLOAD_STATS_FIELD_ALL})
      fail(ZRT_ERR_INVALID_ARGUMENT,
           "stats->field_mask has unknown bits 0x{:x} (a header newer than the library?)",
           m & ~uint64_t{ZRT_OFFLOAD_STATS_FIELD_ALL});
    OffloadStats s = o.stats();
    if (m & ZRT_OFFLOAD_STATS_FIELD_COUNTS) {
      stats->pushes = s.pushes;
      stats->fetches = s.fetches;
      stats->discards = s.discards;
      stats->prefetches = s.prefetches;
      stats->tokens = s.tokens;
    }
    if (m & ZRT_OFFLOAD_STATS_FIELD_BYTES) {
      stats->ring_bytes = s.ring_bytes;
      stats->ring_used_bytes = s.ring_used;
      stats->offloaded_bytes = s.offloaded;
      stats->peak_offloaded_bytes = s.peak_offloaded;
      stats->device_bytes_saved = s.device_saved;
      stats->peak_device_bytes_saved = s.peak_device_saved;
    }
    if (m & ZRT_OFFLOAD_STATS_FIELD_TIMES) {
      stats->copy_seconds = s.copy_seconds;
      stats->exposed_seconds = s.exposed_seconds;
    }
    if (m & ZRT_OFFLOAD_STATS_FIELD_ENGINE) stats->engine = s.engine;
    return ZRT_SUCCESS;
  });
}

}  // extern "C"
