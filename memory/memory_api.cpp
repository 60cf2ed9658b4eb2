// The C entry points of zerort/memory.h for pools.
#include "memory/memory_fields.hpp"
#include "memory/memory_part.hpp"
#include "zerort/memory.h"

using namespace zrt;

namespace {

// The fast path of zrt_pool_alloc converts a lifetime by cast.
static_assert(static_cast<int>(Lifetime::Long) == ZRT_LIFETIME_LONG &&
              static_cast<int>(Lifetime::Transient) == ZRT_LIFETIME_TRANSIENT);

// Bound once at load: pool_table() is a function-local static, whose guard check would
// otherwise be paid on every zrt_pool_alloc and zrt_pool_free.
ObjectTable<PoolEntry> &g_pools = pool_table();

PoolEntry &pool_from(zrt_pool_h pool) {
  return g_pools.get(handle_value(pool), "pool");
}

BufferId buffer_id(zrt_buffer_h buffer) {
  return BufferId{handle_value(buffer)};
}

PoolOverrides overrides_from(const zrt_pool_params_t *p, MemorySpace *space) {
  PoolRequest request;
  std::map<std::string, std::string> no_keys;
  pool_params_table().read(p, no_keys, request);
  *space = request.space;
  return request.overrides;
}

// The checked paths of zrt_pool_alloc and zrt_pool_free: everything the thread cache
// does not serve, errors included.
[[gnu::noinline, gnu::cold]] zrt_status_t pool_alloc_checked(zrt_pool_h pool, size_t bytes,
                                                             zrt_lifetime_t lifetime,
                                                             void **ptr_p) {
  return abi_call("zrt_pool_alloc", [&] {
    Pool &p = *pool_from(pool).pool;
    Lifetime l = lifetime_from_c(lifetime, "lifetime");
    require_nonnull(ptr_p, "ptr_p");
    *ptr_p = p.allocate(bytes, l);
    return ZRT_SUCCESS;
  });
}

[[gnu::noinline, gnu::cold]] zrt_status_t pool_free_checked(zrt_pool_h pool, void *ptr) {
  return abi_call("zrt_pool_free", [&] {
    pool_from(pool).pool->free(ptr);
    return ZRT_SUCCESS;
  });
}

}  // namespace

extern "C" {

ZRT_API zrt_status_t zrt_context_pool(zrt_context_h context, zrt_memory_space_t space,
                                      zrt_pool_h *pool_p) {
  return abi_call("zrt_context_pool", [&] {
    Context &c = context_from(context);
    MemorySpace s = space_from_c(space, "space");
    require_nonnull(pool_p, "pool_p");
    *pool_p = to_handle<zrt_pool_h>(c.part<MemoryPart>().pool_entry(s).handle);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_context_memory_limit(zrt_context_h context, zrt_memory_limit_t *limit_p) {
  return abi_call("zrt_context_memory_limit", [&] {
    Context &c = context_from(context);
    require_nonnull(limit_p, "limit_p");
    memory_limit_table().check(*limit_p);
    memory_limit_table().fill(c.part<MemoryPart>().host_room(), *limit_p);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_pool_create(zrt_context_h context, const zrt_pool_params_t *params,
                                     zrt_pool_h *pool_p) {
  return abi_call("zrt_pool_create", [&] {
    Context &c = context_from(context);
    require_nonnull(pool_p, "pool_p");
    MemorySpace space;
    PoolOverrides o = overrides_from(params, &space);
    *pool_p = to_handle<zrt_pool_h>(c.part<MemoryPart>().create_pool(space, o).handle);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_pool_destroy(zrt_pool_h pool) {
  return abi_call("zrt_pool_destroy", [&] {
    PoolEntry &e = pool_from(pool);
    e.part->destroy_pool(e);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_pool_alloc(zrt_pool_h pool, size_t bytes, zrt_lifetime_t lifetime,
                                    void **ptr_p) {
  // The fast path: this thread's cache of the pool, found by the handle alone
  // (ThreadCache::try_allocate). Whatever it cannot serve, every error included, takes
  // the checked path, which is out of line so that this one makes no call and keeps
  // nothing on the stack.
  if (ThreadCache *c = find_thread_cache_by_handle(handle_value(pool));
      c != nullptr && ptr_p != nullptr &&
      (lifetime == ZRT_LIFETIME_LONG || lifetime == ZRT_LIFETIME_TRANSIENT)) [[likely]] {
    if (void *p = c->try_allocate(bytes, static_cast<Lifetime>(lifetime))) {
      *ptr_p = p;
      return ZRT_SUCCESS;
    }
  }
  return pool_alloc_checked(pool, bytes, lifetime, ptr_p);
}

ZRT_API zrt_status_t zrt_pool_free(zrt_pool_h pool, void *ptr) {
  if (ThreadCache *c = find_thread_cache_by_handle(handle_value(pool)); c != nullptr) [[likely]]
    if (c->try_free(ptr)) return ZRT_SUCCESS;
  return pool_free_checked(pool, ptr);
}

ZRT_API zrt_status_t zrt_pool_alloc_movable(zrt_pool_h pool, size_t bytes, zrt_lifetime_t lifetime,
                                            zrt_buffer_h *buffer_p) {
  return abi_call("zrt_pool_alloc_movable", [&] {
    Pool &p = *pool_from(pool).pool;
    Lifetime l = lifetime_from_c(lifetime, "lifetime");
    require_nonnull(buffer_p, "buffer_p");
    *buffer_p = to_handle<zrt_buffer_h>(p.allocate_movable(bytes, l).value);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_pool_free_movable(zrt_pool_h pool, zrt_buffer_h buffer) {
  return abi_call("zrt_pool_free_movable", [&] {
    pool_from(pool).pool->free(buffer_id(buffer));
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_pool_pointer(zrt_pool_h pool, zrt_buffer_h buffer, void **ptr_p,
                                      size_t *bytes_p, uint64_t *generation_p) {
  return abi_call("zrt_pool_pointer", [&] {
    Pool &p = *pool_from(pool).pool;
    require_nonnull(ptr_p, "ptr_p");
    size_t bytes = 0;
    uint64_t generation = 0;
    void *ptr = p.pointer(buffer_id(buffer), &bytes, &generation);
    *ptr_p = ptr;
    if (bytes_p != nullptr) *bytes_p = bytes;
    if (generation_p != nullptr) *generation_p = generation;
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_pool_lock(zrt_pool_h pool, zrt_buffer_h buffer, void **ptr_p) {
  return abi_call("zrt_pool_lock", [&] {
    Pool &p = *pool_from(pool).pool;
    require_nonnull(ptr_p, "ptr_p");
    *ptr_p = p.lock(buffer_id(buffer));
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_pool_unlock(zrt_pool_h pool, zrt_buffer_h buffer) {
  return abi_call("zrt_pool_unlock", [&] {
    pool_from(pool).pool->unlock(buffer_id(buffer));
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_pool_defragment(zrt_pool_h pool, size_t *moved_bytes_p) {
  return abi_call("zrt_pool_defragment", [&] {
    size_t moved = pool_from(pool).pool->defragment();
    if (moved_bytes_p != nullptr) *moved_bytes_p = moved;
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_pool_trim(zrt_pool_h pool, size_t *released_bytes_p) {
  return abi_call("zrt_pool_trim", [&] {
    size_t released = pool_from(pool).pool->trim();
    if (released_bytes_p != nullptr) *released_bytes_p = released;
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_pool_stats(zrt_pool_h pool, zrt_pool_stats_t *stats_p) {
  return abi_call("zrt_pool_stats", [&] {
    Pool &p = *pool_from(pool).pool;
    require_nonnull(stats_p, "stats_p");
    pool_stats_table().check(*stats_p);  // before the stats drain the caches
    zrt_pool_stats_t out = *stats_p;
    pool_stats_table().fill(p.stats(), out);
    *stats_p = out;
    return ZRT_SUCCESS;
  });
}

}  // extern "C"
