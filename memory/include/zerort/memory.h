/**
 * @file zerort/memory.h
 * @brief Memory pools (host, pinned host, device) and activation offload.
 *
 * ## Pools
 * A pool hands out memory of one space from an arena that it reserves once and grows by
 * whole segments (memory.<space>.segment_bytes) up to a limit (memory.<space>.limit, by
 * default what the process may use: its memory cgroup's limit, RLIMIT_AS and RLIMIT_DATA
 * taken into account; zrt_context_memory_limit reports them). Each context has one pool per
 * space (zrt_context_pool); zrt_pool_create makes more.
 *
 * Two lifetimes keep the arena from fragmenting: ZRT_LIFETIME_LONG allocations
 * (parameters, gradients, optimizer state, checkpointed activations) are packed from the
 * low end, ZRT_LIFETIME_TRANSIENT ones (buckets, activations, workspace) from the high
 * end. Within that, the pool picks the smallest free block that fits (best fit) and
 * merges free neighbours; a block just freed is first kept, unmerged, for the next
 * request of its size and lifetime (the same activation or bucket every step), and
 * merged before the pool would grow, compact or report stats.
 *
 * Two kinds of allocation live side by side:
 *  - raw allocations (zrt_pool_alloc) never move; their pointer is theirs until freed;
 *  - movable buffers (zrt_pool_alloc_movable) are addressed by a handle. The pool may
 *    move them to compact free space: zrt_pool_defragment does, and so may any
 *    allocation on the same pool that would otherwise fail for fragmentation alone
 *    (see zrt_compact_t). Every compaction that moves something increments the pool's
 *    generation: a pointer read with zrt_pool_pointer is valid while the generation is
 *    unchanged. zrt_pool_lock keeps one buffer in place until zrt_pool_unlock.
 *
 * Sizes are rounded up to the pool's alignment (256 bytes by default); every address is
 * aligned to it.
 *
 * ## Activation offload
 * An offload engine owns a ring of pinned host memory. zrt_offload_push starts copying a
 * tensor (an activation in forward) into the ring and returns a token; in backward,
 * zrt_offload_prefetch starts copying it back into a staging buffer in the tensor's own
 * memory space, at most prefetch_depth tokens ahead (2: double buffering), or
 * zrt_offload_prefetch_into straight into the buffer it will be fetched into, and
 * zrt_offload_fetch delivers it into the caller's buffer and releases the token. Tokens
 * may be fetched in any order; backward usually fetches the newest first. Copies run on a
 * copy thread (host memory) or on a CUDA stream ordered by events (device memory in CUDA
 * builds), so they overlap the caller's compute.
 */
#ifndef ZERORT_MEMORY_H
#define ZERORT_MEMORY_H

#include "zerort/context.h"
#include "zerort/defs.h"
#include "zerort/status.h"

ZRT_BEGIN_DECLS

/** @brief A memory pool of one space. */
typedef struct zrt_pool *zrt_pool_h;
/** @brief A movable allocation of a pool. */
typedef struct zrt_buffer *zrt_buffer_h;
/** @brief An activation offload engine: a pinned host ring and a copy engine. */
typedef struct zrt_offload *zrt_offload_h;
/** @brief A tensor held by an offload engine, from zrt_offload_push to fetch or discard. */
typedef struct zrt_offload_token *zrt_offload_token_h;

/** @brief Where memory lives. */
typedef enum zrt_memory_space {
  /** Ordinary host memory, committed with mmap; first touch places it. */
  ZRT_MEMORY_HOST = 0,
  /** Page-locked host memory for fast device copies: cudaHostAlloc when a CUDA device is
      present, otherwise mmap + mlock bound to the rank's NUMA node with hwloc. When
      mlock is refused (RLIMIT_MEMLOCK too low) the pool warns once and continues with
      pageable memory; zrt_pool_stats reports page_locked = 0. */
  ZRT_MEMORY_PINNED_HOST = 1,
  /** Device memory of the rank's GPU (cudaMalloc); ZRT_ERR_NOT_SUPPORTED without CUDA. */
  ZRT_MEMORY_DEVICE = 2,
  /** Not a value: makes every int a valid value of the type (see defs.h). */
  ZRT_MEMORY_FORCE_INT_ = -2147483647 - 1
} zrt_memory_space_t;

/** @brief How long an allocation lives, which decides the end of the pool it comes from. */
typedef enum zrt_lifetime {
  /** Parameters, gradients, optimizer state, checkpointed activations: packed from the
      low end. */
  ZRT_LIFETIME_LONG = 0,
  /** Buckets, activations, workspace: packed from the high end. */
  ZRT_LIFETIME_TRANSIENT = 1,
  /** Not a value: makes every int a valid value of the type (see defs.h). */
  ZRT_LIFETIME_FORCE_INT_ = -2147483647 - 1
} zrt_lifetime_t;

/** @brief When an allocation compacts the pool by itself (zrt_pool_defragment always can). */
typedef enum zrt_compact {
  /** When the request cannot be met even after growing the pool to its limit, but the
      free memory would suffice if it were in one piece (the default). */
  ZRT_COMPACT_AUTO = 0,
  /** Also before growing: compact whenever free committed memory would suffice. Keeps
      the reservation smallest, at the cost of more moves. */
  ZRT_COMPACT_EAGER = 1,
  /** Never: only zrt_pool_defragment moves buffers. */
  ZRT_COMPACT_OFF = 2,
  /** Not a value: makes every int a valid value of the type (see defs.h). */
  ZRT_COMPACT_FORCE_INT_ = -2147483647 - 1
} zrt_compact_t;

/**
 * @name zrt_pool_params_field
 * Which fields of zrt_pool_params_t the caller set.
 * @{
 */
#define ZRT_POOL_PARAM_FIELD_SPACE ZRT_BIT(0)
#define ZRT_POOL_PARAM_FIELD_LIMIT_BYTES ZRT_BIT(1)
#define ZRT_POOL_PARAM_FIELD_SEGMENT_BYTES ZRT_BIT(2)
#define ZRT_POOL_PARAM_FIELD_ALIGNMENT ZRT_BIT(3)
#define ZRT_POOL_PARAM_FIELD_COMPACT ZRT_BIT(4)
#define ZRT_POOL_PARAM_FIELD_NAME ZRT_BIT(5)
/** every field of this header's version */
#define ZRT_POOL_PARAM_FIELD_ALL (ZRT_BIT(6) - 1)
/** @} */

/** @brief Parameters of zrt_pool_create. Unset fields take the defaults shown. */
typedef struct zrt_pool_params {
  uint64_t field_mask;
  zrt_memory_space_t space; /**< default ZRT_MEMORY_HOST */
  size_t limit_bytes;       /**< most the pool may reserve; default memory.<space>.limit */
  size_t segment_bytes;     /**< growth step; default memory.<space>.segment_bytes */
  size_t alignment;         /**< a power of two, 64 .. 1 MiB; default memory.alignment (256) */
  zrt_compact_t compact;    /**< default memory.compact (ZRT_COMPACT_AUTO) */
  const char *name;         /**< shown in messages and stats; default the space's name;
                                 copied */
} zrt_pool_params_t;

/**
 * @name zrt_pool_stats_field
 * Which fields of zrt_pool_stats_t to fill.
 * @{
 */
#define ZRT_POOL_STATS_FIELD_SPACE ZRT_BIT(0)
/** limit_bytes */
#define ZRT_POOL_STATS_FIELD_LIMIT ZRT_BIT(1)
/** reserved_bytes, peak_reserved_bytes */
#define ZRT_POOL_STATS_FIELD_RESERVED ZRT_BIT(2)
/** live_bytes, peak_live_bytes, allocations, movable_allocations */
#define ZRT_POOL_STATS_FIELD_LIVE ZRT_BIT(3)
/** free_bytes, largest_free_bytes, fragmentation */
#define ZRT_POOL_STATS_FIELD_FREE ZRT_BIT(4)
/** compactions, moved_bytes, generation */
#define ZRT_POOL_STATS_FIELD_COMPACTION ZRT_BIT(5)
/** out_of_memory_count */
#define ZRT_POOL_STATS_FIELD_FAILURES ZRT_BIT(6)
/** page_locked, numa_node, segments */
#define ZRT_POOL_STATS_FIELD_PLACEMENT ZRT_BIT(7)
/** thread_cached_bytes */
#define ZRT_POOL_STATS_FIELD_THREAD_CACHE ZRT_BIT(8)
/** every field of this header's version */
#define ZRT_POOL_STATS_FIELD_ALL (ZRT_BIT(9) - 1)
/** @} */

/** @brief A pool's counters; zrt_pool_stats fills the fields named in field_mask. */
typedef struct zrt_pool_stats {
  uint64_t field_mask;
  zrt_memory_space_t space;
  size_t limit_bytes;           /**< most the pool may reserve */
  size_t reserved_bytes;        /**< memory the pool holds from the system now */
  size_t peak_reserved_bytes;   /**< highest reserved_bytes so far */
  size_t live_bytes;            /**< bytes in allocations (sizes rounded to the alignment) */
  size_t peak_live_bytes;       /**< highest live_bytes so far */
  size_t allocations;           /**< live allocations, raw and movable */
  size_t movable_allocations;   /**< live movable buffers */
  size_t free_bytes;            /**< reserved_bytes - live_bytes */
  size_t largest_free_bytes;    /**< the largest free block: the largest request that
                                     needs neither growth nor compaction */
  double fragmentation;         /**< 1 - largest_free_bytes / free_bytes; 0 when no memory
                                     is free, near 1 when free memory is in small pieces */
  uint64_t compactions;         /**< compactions that moved at least one buffer */
  uint64_t moved_bytes;         /**< bytes moved by compactions */
  uint64_t generation;          /**< increments with each compaction that moved a buffer */
  uint64_t out_of_memory_count; /**< requests that failed with ZRT_ERR_OUT_OF_MEMORY */
  int page_locked;              /**< 1 if the memory is page-locked (pinned host, device) */
  int numa_node;                /**< the NUMA node the memory is bound to, -1 if none */
  size_t segments;              /**< segments committed now */
  size_t thread_cached_bytes;   /**< freed by other threads' allocations, waiting idle in
                                     their thread caches (memory.thread_cache_bytes): neither
                                     live nor free; reserved = live + free + this */
} zrt_pool_stats_t;

/**
 * @brief The context's pool of @p space, created on first use with the configuration's
 * limit and segment size (memory.<space>.*). The context owns it: do not destroy it.
 * @return ZRT_ERR_NOT_SUPPORTED for ZRT_MEMORY_DEVICE without a CUDA build or device.
 * Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_context_pool(zrt_context_h context, zrt_memory_space_t space,
                                      zrt_pool_h *pool_p);

/**
 * @brief Create a pool. It reserves address space for @c limit_bytes but commits memory
 * only as allocations need it.
 * @param params may be NULL (a host pool with the configuration's defaults).
 * Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_pool_create(zrt_context_h context, const zrt_pool_params_t *params,
                                     zrt_pool_h *pool_p);

/**
 * @brief Destroy a pool made by zrt_pool_create and return its memory to the system.
 * Fails with ZRT_ERR_INVALID_STATE, destroying nothing, while it has live allocations;
 * fails with ZRT_ERR_INVALID_ARGUMENT for a context's own pool. zrt_finalize destroys
 * pools that are left. Local, blocking. Not thread-safe with other calls on the pool.
 */
ZRT_API zrt_status_t zrt_pool_destroy(zrt_pool_h pool);

/**
 * @brief Allocate @p bytes that never move.
 * @return ZRT_ERR_INVALID_ARGUMENT for 0 bytes or a bad lifetime; ZRT_ERR_OUT_OF_MEMORY
 * when the pool cannot provide them (the message carries the pool's stats).
 * Local, non-blocking, thread-safe. May compact the pool (see zrt_compact_t).
 */
ZRT_API zrt_status_t zrt_pool_alloc(zrt_pool_h pool, size_t bytes, zrt_lifetime_t lifetime,
                                    void **ptr_p);

/**
 * @brief Free a raw allocation. A pointer the pool does not own, one inside an
 * allocation, a movable buffer's address, or one already freed fails with
 * ZRT_ERR_INVALID_ARGUMENT and changes nothing. (A pointer freed and then handed out
 * again is live again: freeing it twice frees the new owner's memory, as with free(3).
 * Movable buffers are immune: their handles carry a generation.)
 * Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_pool_free(zrt_pool_h pool, void *ptr);

/**
 * @brief Allocate a movable buffer of @p bytes. Read its address with zrt_pool_pointer.
 * Errors as zrt_pool_alloc. Local, non-blocking, thread-safe. May compact the pool.
 */
ZRT_API zrt_status_t zrt_pool_alloc_movable(zrt_pool_h pool, size_t bytes, zrt_lifetime_t lifetime,
                                            zrt_buffer_h *buffer_p);

/**
 * @brief Free a movable buffer; its handle is stale afterwards (ZRT_ERR_INVALID_HANDLE,
 * also after the slot is reused). Fails with ZRT_ERR_INVALID_STATE while it is locked.
 * Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_pool_free_movable(zrt_pool_h pool, zrt_buffer_h buffer);

/**
 * @brief The current address of a movable buffer, and optionally its size and the pool's
 * generation. The address is valid until the generation changes (any compaction that
 * moves something), or for as long as the buffer is locked.
 * @param[out] bytes_p        the size asked for at allocation; may be NULL
 * @param[out] generation_p   the pool's generation; may be NULL
 * Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_pool_pointer(zrt_pool_h pool, zrt_buffer_h buffer, void **ptr_p,
                                      size_t *bytes_p, uint64_t *generation_p);

/**
 * @brief Keep a movable buffer in place (for an asynchronous copy or collective on it)
 * and return its address. Locks nest; each needs a zrt_pool_unlock.
 * Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_pool_lock(zrt_pool_h pool, zrt_buffer_h buffer, void **ptr_p);

/**
 * @brief Undo one zrt_pool_lock. ZRT_ERR_INVALID_STATE if the buffer is not locked.
 * Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_pool_unlock(zrt_pool_h pool, zrt_buffer_h buffer);

/**
 * @brief Compact the pool: move unlocked movable buffers towards their lifetime's end,
 * long-lived down and transient up, so free memory gathers in large blocks. Raw and
 * locked allocations stay where they are, and the contents of every buffer are
 * preserved. Increments the generation if anything moved.
 * @param[out] moved_bytes_p bytes moved; may be NULL
 * Local, blocking (it copies), thread-safe; other calls on the pool wait for it.
 */
ZRT_API zrt_status_t zrt_pool_defragment(zrt_pool_h pool, size_t *moved_bytes_p);

/**
 * @brief Return free committed memory to the system where whole segments are free
 * (next to the pool's uncommitted middle, or whole segments of CUDA spaces).
 * @param[out] released_bytes_p bytes returned; may be NULL
 * Local, blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_pool_trim(zrt_pool_h pool, size_t *released_bytes_p);

/**
 * @brief Fill the fields of @p stats named in stats->field_mask.
 * Local, non-blocking, thread-safe (a consistent snapshot).
 */
ZRT_API zrt_status_t zrt_pool_stats(zrt_pool_h pool, zrt_pool_stats_t *stats_p);

/** @brief What bounds a process's host memory, as zrt_context_memory_limit reports it. */
typedef enum zrt_memory_limit_kind {
  ZRT_MEMORY_LIMIT_PHYSICAL = 0,      /**< the node's physical memory */
  ZRT_MEMORY_LIMIT_CGROUP = 1,        /**< the memory cgroup's limit: cgroup v2 memory.max or v1
                                           memory.limit_in_bytes (what Slurm's --mem sets) */
  ZRT_MEMORY_LIMIT_ADDRESS_SPACE = 2, /**< RLIMIT_AS (ulimit -v) */
  ZRT_MEMORY_LIMIT_DATA = 3           /**< RLIMIT_DATA (ulimit -d) */
} zrt_memory_limit_kind_t;

/**
 * @name zrt_memory_limit_field
 * Which fields of zrt_memory_limit_t to fill.
 * @{
 */
/** kind, limit_bytes, sharing_ranks */
#define ZRT_MEMORY_LIMIT_FIELD_LIMIT ZRT_BIT(0)
/** used_bytes, available_bytes */
#define ZRT_MEMORY_LIMIT_FIELD_USE ZRT_BIT(1)
/** every field of this header's version */
#define ZRT_MEMORY_LIMIT_FIELD_ALL (ZRT_BIT(2) - 1)
/** @} */

/**
 * @brief The host memory limit that leaves this rank the least room now, of: the node's
 * physical memory and the memory cgroup's limit (the smallest on the path of the process's
 * cgroup), each shared by the context's ranks on the node that are under it, and the
 * process's own RLIMIT_AS and RLIMIT_DATA. zrt_context_memory_limit fills the fields named in
 * field_mask.
 */
typedef struct zrt_memory_limit {
  uint64_t field_mask;
  zrt_memory_limit_kind_t kind;
  uint64_t limit_bytes;     /**< the limit, whole */
  int sharing_ranks;        /**< ranks of the context on this node under it (1 for RLIMIT_*):
                                 this rank's share is limit_bytes / sharing_ranks */
  uint64_t used_bytes;      /**< what this process uses of it now: resident memory against
                                 physical memory or a cgroup, mapped address space (pools'
                                 reservations included) against RLIMIT_AS, private writable
                                 memory against RLIMIT_DATA */
  uint64_t available_bytes; /**< the share less used_bytes (0 when it uses more): what this
                                 rank may still allocate outside zerort's pools */
} zrt_memory_limit_t;

/**
 * @brief Fill the fields of @p limit named in limit->field_mask (unknown bits fail with
 * ZRT_ERR_INVALID_ARGUMENT): the limit a program compares its own plans with (activations,
 * buffers) before it allocates them. The limits are read at zrt_init (a cgroup's through
 * /proc/self/cgroup), the use at each call (/proc/self/status). zrt_engine_commit makes the
 * same comparison for the engine's buffers. Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_context_memory_limit(zrt_context_h context, zrt_memory_limit_t *limit_p);

/**
 * @name zrt_offload_params_field
 * Which fields of zrt_offload_params_t the caller set.
 * @{
 */
#define ZRT_OFFLOAD_PARAM_FIELD_RING_BYTES ZRT_BIT(0)
#define ZRT_OFFLOAD_PARAM_FIELD_PREFETCH_DEPTH ZRT_BIT(1)
#define ZRT_OFFLOAD_PARAM_FIELD_POOL ZRT_BIT(2)
/** every field of this header's version */
#define ZRT_OFFLOAD_PARAM_FIELD_ALL (ZRT_BIT(3) - 1)
/** @} */

/** @brief Parameters of zrt_offload_create. */
typedef struct zrt_offload_params {
  uint64_t field_mask;
  size_t ring_bytes;  /**< size of the pinned host ring; default offload.ring_bytes */
  int prefetch_depth; /**< tokens staged ahead, 1 .. 64; default offload.prefetch_depth (2) */
  zrt_pool_h pool;    /**< a ZRT_MEMORY_PINNED_HOST pool to take the ring from; default
                           the context's; must outlive the engine */
} zrt_offload_params_t;

/**
 * @name zrt_offload_stats_field
 * Which fields of zrt_offload_stats_t to fill.
 * @{
 */
/** pushes, fetches, discards, prefetches, tokens */
#define ZRT_OFFLOAD_STATS_FIELD_COUNTS ZRT_BIT(0)
/** ring_bytes, ring_used_bytes, offloaded_bytes, peak_offloaded_bytes, \ device_bytes_saved,
 * peak_device_bytes_saved */
#define ZRT_OFFLOAD_STATS_FIELD_BYTES ZRT_BIT(1)
/** copy_seconds, exposed_seconds */
#define ZRT_OFFLOAD_STATS_FIELD_TIMES ZRT_BIT(2)
/** engine */
#define ZRT_OFFLOAD_STATS_FIELD_ENGINE ZRT_BIT(3)
/** every field of this header's version */
#define ZRT_OFFLOAD_STATS_FIELD_ALL (ZRT_BIT(4) - 1)
/** @} */

/** @brief An offload engine's accounting; zrt_offload_stats fills the named fields. */
typedef struct zrt_offload_stats {
  uint64_t field_mask;
  uint64_t pushes, fetches, discards; /**< calls that succeeded */
  uint64_t prefetches;                /**< prefetches that staged a token */
  size_t tokens;                      /**< tokens held now */
  size_t ring_bytes;                  /**< size of the pinned ring */
  size_t ring_used_bytes;             /**< ring space held by tokens now */
  size_t offloaded_bytes;             /**< bytes held for tokens now */
  size_t peak_offloaded_bytes;        /**< highest offloaded_bytes so far */
  size_t device_bytes_saved;          /**< offloaded_bytes whose source is device memory: what
                                           the device can free while they are away */
  size_t peak_device_bytes_saved;     /**< highest device_bytes_saved so far */
  double copy_seconds;                /**< time spent copying, in the background or not */
  double exposed_seconds;             /**< time callers waited in wait/fetch for copies: the
                                           part of copy_seconds not hidden behind compute.
                                           The thread engine's copies can also slow the
                                           compute when its thread shares the caller's
                                           core, which this does not see (zrt-bench offload
                                           measures both) */
  const char *engine;                 /**< "thread" or "cuda"; static */
} zrt_offload_stats_t;

/**
 * @brief The context's offload engine, created on first use with the configuration's
 * ring size (offload.ring_bytes) from the context's pinned host pool. The context owns
 * it. @return ZRT_ERR_OUT_OF_MEMORY when the ring does not fit in pinned memory.
 * Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_context_offload(zrt_context_h context, zrt_offload_h *offload_p);

/**
 * @brief Create an offload engine; its ring is allocated now.
 * @param params may be NULL.
 * @return ZRT_ERR_OUT_OF_MEMORY when pinned memory is exhausted.
 * Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_offload_create(zrt_context_h context, const zrt_offload_params_t *params,
                                        zrt_offload_h *offload_p);

/**
 * @brief Destroy an offload engine made by zrt_offload_create: waits for its copies,
 * discards its tokens and frees its ring. Local, blocking. Not thread-safe with other
 * calls on the engine.
 */
ZRT_API zrt_status_t zrt_offload_destroy(zrt_offload_h offload);

/**
 * @brief Start copying @p bytes at @p src into the ring. @p src must stay unchanged until
 * the copy is done (zrt_offload_test / zrt_offload_wait); after that it may be reused.
 * @return ZRT_ERR_OUT_OF_MEMORY when the ring has no room for @p bytes (fetch or discard
 * tokens, or make the ring larger); ZRT_ERR_INVALID_ARGUMENT for 0 bytes or NULL.
 * Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_offload_push(zrt_offload_h offload, const void *src, size_t bytes,
                                      zrt_offload_token_h *token_p);

/**
 * @brief ZRT_SUCCESS when the push of @p token has finished copying (its source may be
 * reused), ZRT_IN_PROGRESS before. Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_offload_test(zrt_offload_h offload, zrt_offload_token_h token);

/** @brief Block until the push of @p token has finished copying. Local, blocking, thread-safe. */
ZRT_API zrt_status_t zrt_offload_wait(zrt_offload_h offload, zrt_offload_token_h token);

/**
 * @brief Start bringing @p token back into a staging buffer in its source's memory space,
 * so that zrt_offload_fetch only has a local copy left. At most prefetch_depth tokens are
 * staged at once; later prefetches start as fetches free staging buffers. A second
 * prefetch of the same token does nothing.
 * Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_offload_prefetch(zrt_offload_h offload, zrt_offload_token_h token);

/**
 * @brief Start bringing @p token back straight into @p dst, so that zrt_offload_fetch
 * with the same @p dst only waits: no staging buffer and no second copy. Use it when the
 * destination already exists at prefetch time; on host memory it is the form that hides
 * the copy (a staging buffer there costs a second copy as long as the first). @p dst
 * must stay untouched until the fetch. Does nothing if @p token is already staged.
 * Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_offload_prefetch_into(zrt_offload_h offload, zrt_offload_token_h token,
                                               void *dst);

/**
 * @brief Copy @p token's bytes into @p dst (which may be the original source) and release
 * the token, which is stale afterwards. Waits for its push or prefetch if needed.
 * Local, blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_offload_fetch(zrt_offload_h offload, zrt_offload_token_h token, void *dst);

/**
 * @brief Release a token without fetching it (e.g. the activation will be recomputed).
 * Waits for its copies. Local, blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_offload_discard(zrt_offload_h offload, zrt_offload_token_h token);

/**
 * @brief Fill the fields of @p stats named in stats->field_mask.
 * Local, non-blocking, thread-safe.
 */
ZRT_API zrt_status_t zrt_offload_stats(zrt_offload_h offload, zrt_offload_stats_t *stats_p);

ZRT_END_DECLS

#endif /* ZERORT_MEMORY_H */
