// zerort/memory.h through the C ABI: the context's pools and offload engine, pools and
// engines made by the program, compaction seen from C, and every bad input of the issue
// with both its status and its message. Everything here is local: ranks run it side by
// side, and all_ranks() only gathers the verdicts.
#include <nlohmann/json.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "sizes.hpp"
#include "support/mpi_fixture.hpp"

namespace {

using test::mentions;

zrt_pool_h make_pool(zrt_memory_space_t space, size_t limit, zrt_compact_t compact,
                     const char *name) {
  zrt_pool_params_t p;
  std::memset(&p, 0, sizeof p);
  p.field_mask = ZRT_POOL_PARAM_FIELD_SPACE | ZRT_POOL_PARAM_FIELD_LIMIT_BYTES |
                 ZRT_POOL_PARAM_FIELD_SEGMENT_BYTES | ZRT_POOL_PARAM_FIELD_COMPACT |
                 ZRT_POOL_PARAM_FIELD_NAME;
  p.space = space;
  p.limit_bytes = limit;
  p.segment_bytes = MiB;
  p.compact = compact;
  p.name = name;
  zrt_pool_h pool = nullptr;
  EXPECT_EQ(zrt_pool_create(test::context(), &p, &pool), ZRT_SUCCESS) << test::last_error();
  return pool;
}

zrt_pool_stats_t stats_of(zrt_pool_h pool) {
  zrt_pool_stats_t s;
  std::memset(&s, 0, sizeof s);
  s.field_mask = ZRT_POOL_STATS_FIELD_ALL;
  EXPECT_EQ(zrt_pool_stats(pool, &s), ZRT_SUCCESS) << test::last_error();
  return s;
}

nlohmann::json context_description() {
  size_t length = 0;
  EXPECT_EQ(zrt_context_describe(test::context(), nullptr, 0, &length), ZRT_SUCCESS);
  std::string text(length + 1, '\0');
  EXPECT_EQ(zrt_context_describe(test::context(), text.data(), text.size(), &length), ZRT_SUCCESS);
  text.resize(length);
  return nlohmann::json::parse(text);
}

}  // namespace

TEST(MemoryApi, TheMemoryLimitNamesItsKindShareAndUse) {
  zrt_memory_limit_t l;
  std::memset(&l, 0xab, sizeof l);
  l.field_mask = ZRT_MEMORY_LIMIT_FIELD_ALL;
  ASSERT_EQ(zrt_context_memory_limit(test::context(), &l), ZRT_SUCCESS) << test::last_error();
  EXPECT_GE(static_cast<int>(l.kind), ZRT_MEMORY_LIMIT_PHYSICAL);
  EXPECT_LE(static_cast<int>(l.kind), ZRT_MEMORY_LIMIT_DATA);
  EXPECT_GT(l.limit_bytes, 0u);
  EXPECT_GE(l.sharing_ranks, 1);
  EXPECT_LE(l.sharing_ranks, test::size());
  EXPECT_GT(l.used_bytes, 0u);
  EXPECT_LE(l.available_bytes, l.limit_bytes / static_cast<uint64_t>(l.sharing_ranks));
  // Only the fields of the mask are written.
  zrt_memory_limit_t only;
  std::memset(&only, 0xab, sizeof only);
  only.field_mask = ZRT_MEMORY_LIMIT_FIELD_LIMIT;
  ASSERT_EQ(zrt_context_memory_limit(test::context(), &only), ZRT_SUCCESS);
  EXPECT_EQ(only.limit_bytes, l.limit_bytes);
  uint64_t untouched;
  std::memset(&untouched, 0xab, sizeof untouched);
  EXPECT_EQ(only.used_bytes, untouched);
  EXPECT_EQ(only.available_bytes, untouched);
  // Physical memory is shared by the context's ranks on the node, each limit listed with
  // its share in the context's description.
  const nlohmann::json limits = context_description()["memory"]["limits"];
  ASSERT_TRUE(limits.is_array() && !limits.empty()) << limits.dump();
  zrt_context_attr_t a{};
  a.field_mask = ZRT_CONTEXT_ATTR_FIELD_LOCAL;
  ASSERT_EQ(zrt_context_query(test::context(), &a), ZRT_SUCCESS);
  EXPECT_NE(limits[0]["limit"].get<std::string>().find("the node's physical memory of"),
            std::string::npos)
      << limits.dump();
  EXPECT_EQ(limits[0]["sharing_ranks"].get<int>(), a.local_size) << limits.dump();
}

TEST(MemoryApi, TheMemoryLimitRefusesANullStructAndUnknownBits) {
  EXPECT_EQ(zrt_context_memory_limit(test::context(), nullptr), ZRT_ERR_INVALID_ARGUMENT);
  mentions("zrt_context_memory_limit: limit_p is NULL");
  zrt_memory_limit_t l{};
  l.field_mask = ZRT_MEMORY_LIMIT_FIELD_ALL | (1u << 7);
  l.limit_bytes = 7;
  EXPECT_EQ(zrt_context_memory_limit(test::context(), &l), ZRT_ERR_INVALID_ARGUMENT);
  mentions("limit_p->field_mask");
  EXPECT_EQ(l.limit_bytes, 7u);
  EXPECT_EQ(zrt_context_memory_limit(nullptr, &l), ZRT_ERR_INVALID_HANDLE);
}

TEST(MemoryApi, ContextPoolsServeEveryLifetimeAndKind) {
  zrt_pool_h host = nullptr, again = nullptr;
  ASSERT_EQ(zrt_context_pool(test::context(), ZRT_MEMORY_HOST, &host), ZRT_SUCCESS);
  ASSERT_EQ(zrt_context_pool(test::context(), ZRT_MEMORY_HOST, &again), ZRT_SUCCESS);
  EXPECT_EQ(host, again);
  void *weights = nullptr, *activation = nullptr;
  ASSERT_EQ(zrt_pool_alloc(host, 3000, ZRT_LIFETIME_LONG, &weights), ZRT_SUCCESS);
  ASSERT_EQ(zrt_pool_alloc(host, 5000, ZRT_LIFETIME_TRANSIENT, &activation), ZRT_SUCCESS);
  EXPECT_LT(weights, activation);  // the two lifetimes come from opposite ends
  EXPECT_EQ(reinterpret_cast<uintptr_t>(weights) % 256, 0u);
  std::memset(weights, 1, 3000);
  std::memset(activation, 2, 5000);
  zrt_buffer_h state = nullptr;
  ASSERT_EQ(zrt_pool_alloc_movable(host, 10000, ZRT_LIFETIME_LONG, &state), ZRT_SUCCESS);
  void *p = nullptr;
  size_t bytes = 0;
  uint64_t generation = 99;
  ASSERT_EQ(zrt_pool_pointer(host, state, &p, &bytes, &generation), ZRT_SUCCESS);
  EXPECT_EQ(bytes, 10000u);
  std::memset(p, 3, bytes);
  zrt_pool_stats_t s = stats_of(host);
  EXPECT_EQ(s.space, ZRT_MEMORY_HOST);
  EXPECT_GE(s.live_bytes, 3072u + 5120u + 10240u);
  EXPECT_GE(s.allocations, 3u);
  EXPECT_GE(s.movable_allocations, 1u);
  EXPECT_EQ(s.generation, generation);
  EXPECT_GE(s.reserved_bytes, s.live_bytes);
  EXPECT_EQ(s.free_bytes, s.reserved_bytes - s.live_bytes);
  EXPECT_EQ(zrt_pool_free(host, weights), ZRT_SUCCESS);
  EXPECT_EQ(zrt_pool_free(host, activation), ZRT_SUCCESS);
  EXPECT_EQ(zrt_pool_free_movable(host, state), ZRT_SUCCESS);

  zrt_pool_h pinned = nullptr;
  ASSERT_EQ(zrt_context_pool(test::context(), ZRT_MEMORY_PINNED_HOST, &pinned), ZRT_SUCCESS);
  void *staging = nullptr;
  ASSERT_EQ(zrt_pool_alloc(pinned, MiB, ZRT_LIFETIME_TRANSIENT, &staging), ZRT_SUCCESS);
  std::memset(staging, 4, MiB);
  s = stats_of(pinned);
  EXPECT_EQ(s.space, ZRT_MEMORY_PINNED_HOST);
  EXPECT_EQ(zrt_pool_free(pinned, staging), ZRT_SUCCESS);

  // The context describes its pools.
  nlohmann::json j = context_description();
  EXPECT_TRUE(j["memory"]["pools"].contains("host"));
  EXPECT_TRUE(j["memory"]["pools"].contains("pinned_host"));
  EXPECT_EQ(j["memory"]["pools"]["host"]["resource"]["kind"], "mmap");
}

TEST(MemoryApi, DevicePoolNeedsAGpu) {
  zrt_pool_h device = nullptr;
  zrt_status_t st = zrt_context_pool(test::context(), ZRT_MEMORY_DEVICE, &device);
  if (st == ZRT_SUCCESS) GTEST_SKIP() << "this node has a usable GPU";
  EXPECT_EQ(st, ZRT_ERR_NOT_SUPPORTED);
  mentions("zrt_context_pool: memory space ZRT_MEMORY_DEVICE is not available: ");
  EXPECT_EQ(device, nullptr);
}

TEST(MemoryApi, AllocationCompactsAFragmentedPoolAndTheGenerationTells) {
  zrt_pool_h pool = make_pool(ZRT_MEMORY_HOST, 8 * MiB, ZRT_COMPACT_AUTO, "fragmented");
  std::vector<zrt_buffer_h> b(32);
  for (size_t i = 0; i < b.size(); ++i) {
    ASSERT_EQ(zrt_pool_alloc_movable(pool, 256 * KiB, ZRT_LIFETIME_LONG, &b[i]), ZRT_SUCCESS);
    void *p = nullptr;
    zrt_pool_pointer(pool, b[i], &p, nullptr, nullptr);
    std::memset(p, static_cast<int>(i), 256 * KiB);
  }
  for (size_t i = 0; i < b.size(); i += 2)
    ASSERT_EQ(zrt_pool_free_movable(pool, b[i]), ZRT_SUCCESS);
  uint64_t before = stats_of(pool).generation;
  void *big = nullptr;
  ASSERT_EQ(zrt_pool_alloc(pool, 4 * MiB, ZRT_LIFETIME_LONG, &big), ZRT_SUCCESS)
      << test::last_error();
  zrt_pool_stats_t s = stats_of(pool);
  EXPECT_EQ(s.generation, before + 1);
  EXPECT_EQ(s.compactions, 1u);
  EXPECT_EQ(s.moved_bytes, 16u * 256 * KiB);  // every survivor moved down one hole
  for (size_t i = 1; i < b.size(); i += 2) {
    unsigned char *p = nullptr;
    uint64_t generation = 0;
    ASSERT_EQ(zrt_pool_pointer(pool, b[i], reinterpret_cast<void **>(&p), nullptr, &generation),
              ZRT_SUCCESS);
    EXPECT_EQ(generation, s.generation);
    EXPECT_TRUE(p[0] == i && p[256 * KiB - 1] == i) << "buffer " << i;
  }
  // Defragmenting a compact pool moves nothing.
  size_t moved = 1;
  EXPECT_EQ(zrt_pool_defragment(pool, &moved), ZRT_SUCCESS);
  EXPECT_EQ(moved, 0u);
  EXPECT_EQ(zrt_pool_free(pool, big), ZRT_SUCCESS);
  for (size_t i = 1; i < b.size(); i += 2)
    EXPECT_EQ(zrt_pool_free_movable(pool, b[i]), ZRT_SUCCESS);
  size_t released = 0;
  EXPECT_EQ(zrt_pool_trim(pool, &released), ZRT_SUCCESS);
  EXPECT_EQ(stats_of(pool).reserved_bytes, 0u);
  EXPECT_GT(released, 0u);
  EXPECT_EQ(zrt_pool_destroy(pool), ZRT_SUCCESS);
}

TEST(MemoryApi, LockedBuffersStayPut) {
  zrt_pool_h pool = make_pool(ZRT_MEMORY_HOST, 8 * MiB, ZRT_COMPACT_AUTO, "locks");
  zrt_buffer_h gap = nullptr, held = nullptr;
  ASSERT_EQ(zrt_pool_alloc_movable(pool, 64 * KiB, ZRT_LIFETIME_LONG, &gap), ZRT_SUCCESS);
  ASSERT_EQ(zrt_pool_alloc_movable(pool, 64 * KiB, ZRT_LIFETIME_LONG, &held), ZRT_SUCCESS);
  void *at = nullptr, *now = nullptr;
  ASSERT_EQ(zrt_pool_lock(pool, held, &at), ZRT_SUCCESS);
  ASSERT_EQ(zrt_pool_free_movable(pool, gap), ZRT_SUCCESS);
  EXPECT_EQ(zrt_pool_defragment(pool, nullptr), ZRT_SUCCESS);
  zrt_pool_pointer(pool, held, &now, nullptr, nullptr);
  EXPECT_EQ(now, at);
  EXPECT_EQ(zrt_pool_free_movable(pool, held), ZRT_ERR_INVALID_STATE);
  mentions("unlock it before freeing it");
  EXPECT_EQ(zrt_pool_unlock(pool, held), ZRT_SUCCESS);
  EXPECT_EQ(zrt_pool_defragment(pool, nullptr), ZRT_SUCCESS);
  zrt_pool_pointer(pool, held, &now, nullptr, nullptr);
  EXPECT_LT(now, at);  // unlocked, it slid into the free space below
  EXPECT_EQ(zrt_pool_free_movable(pool, held), ZRT_SUCCESS);
  EXPECT_EQ(zrt_pool_destroy(pool), ZRT_SUCCESS);
}

TEST(MemoryApi, BadInputIsAClearStatusAndMessage) {
  zrt_pool_h pool = make_pool(ZRT_MEMORY_HOST, 4 * MiB, ZRT_COMPACT_AUTO, "checked");
  void *sentinel = reinterpret_cast<void *>(0x1234);
  void *p = sentinel;

  // Handles and pointers.
  EXPECT_EQ(zrt_pool_alloc(nullptr, 10, ZRT_LIFETIME_LONG, &p), ZRT_ERR_INVALID_HANDLE);
  mentions("zrt_pool_alloc: pool is a NULL pool handle");
  EXPECT_EQ(zrt_pool_alloc(reinterpret_cast<zrt_pool_h>(test::world()), 10, ZRT_LIFETIME_LONG, &p),
            ZRT_ERR_INVALID_HANDLE);
  mentions("is not a pool handle");
  EXPECT_EQ(zrt_pool_alloc(pool, 10, ZRT_LIFETIME_LONG, nullptr), ZRT_ERR_INVALID_ARGUMENT);
  mentions("ptr_p is NULL");
  EXPECT_EQ(zrt_context_pool(test::context(), static_cast<zrt_memory_space_t>(7), &pool),
            ZRT_ERR_INVALID_ARGUMENT);
  mentions("space is 7: accepted values are ZRT_MEMORY_HOST, ZRT_MEMORY_PINNED_HOST");

  // Sizes and lifetimes.
  EXPECT_EQ(zrt_pool_alloc(pool, 0, ZRT_LIFETIME_LONG, &p), ZRT_ERR_INVALID_ARGUMENT);
  mentions("zrt_pool_alloc: bytes is 0");
  EXPECT_EQ(zrt_pool_alloc(pool, 10, static_cast<zrt_lifetime_t>(5), &p), ZRT_ERR_INVALID_ARGUMENT);
  mentions("lifetime is 5: accepted values are ZRT_LIFETIME_LONG, ZRT_LIFETIME_TRANSIENT");
  EXPECT_EQ(zrt_pool_alloc(pool, SIZE_MAX, ZRT_LIFETIME_LONG, &p), ZRT_ERR_OUT_OF_MEMORY);
  mentions("pool 'checked' cannot allocate 16 EiB");
  mentions("exceeds the pool's limit of 4 MiB");
  EXPECT_EQ(zrt_pool_alloc(pool, 5 * MiB, ZRT_LIFETIME_TRANSIENT, &p), ZRT_ERR_OUT_OF_MEMORY);
  mentions("largest free block");  // the stats come with the error
  EXPECT_EQ(p, sentinel);          // outputs are written only on success

  // Frees.
  void *a = nullptr;
  ASSERT_EQ(zrt_pool_alloc(pool, 1000, ZRT_LIFETIME_LONG, &a), ZRT_SUCCESS);
  void *keep = nullptr;
  ASSERT_EQ(zrt_pool_alloc(pool, 1000, ZRT_LIFETIME_LONG, &keep), ZRT_SUCCESS);
  EXPECT_EQ(zrt_pool_free(pool, a), ZRT_SUCCESS);
  EXPECT_EQ(zrt_pool_free(pool, a), ZRT_ERR_INVALID_ARGUMENT);
  mentions("zrt_pool_free: ptr");
  mentions("lies in free memory of pool 'checked' (freed twice?)");
  int local = 0;
  EXPECT_EQ(zrt_pool_free(pool, &local), ZRT_ERR_INVALID_ARGUMENT);
  mentions("was not allocated by pool 'checked'");
  EXPECT_EQ(zrt_pool_free(pool, static_cast<char *>(keep) + 8), ZRT_ERR_INVALID_ARGUMENT);
  mentions("points 8 bytes into an allocation");

  // Movable buffers: a stale handle after compaction, a freed one, a locked one.
  zrt_buffer_h b1 = nullptr, b2 = nullptr;
  ASSERT_EQ(zrt_pool_alloc_movable(pool, 64 * KiB, ZRT_LIFETIME_TRANSIENT, &b1), ZRT_SUCCESS);
  ASSERT_EQ(zrt_pool_alloc_movable(pool, 64 * KiB, ZRT_LIFETIME_TRANSIENT, &b2), ZRT_SUCCESS);
  void *b2_addr = nullptr;
  zrt_pool_pointer(pool, b2, &b2_addr, nullptr, nullptr);
  EXPECT_EQ(zrt_pool_free(pool, b2_addr), ZRT_ERR_INVALID_ARGUMENT);
  mentions("is the address of a movable buffer");
  EXPECT_EQ(zrt_pool_free_movable(pool, b1), ZRT_SUCCESS);
  size_t moved = 0;
  EXPECT_EQ(zrt_pool_defragment(pool, &moved), ZRT_SUCCESS);
  EXPECT_GT(moved, 0u);
  EXPECT_EQ(zrt_pool_pointer(pool, b1, &p, nullptr, nullptr), ZRT_ERR_INVALID_HANDLE);
  mentions("zrt_pool_pointer: buffer");
  mentions("is a stale buffer handle of pool 'checked': the buffer was already freed");
  EXPECT_EQ(zrt_pool_free_movable(pool, b1), ZRT_ERR_INVALID_HANDLE);
  mentions("stale buffer handle");
  EXPECT_EQ(zrt_pool_free_movable(pool, nullptr), ZRT_ERR_INVALID_HANDLE);
  mentions("buffer is a NULL buffer handle");
  EXPECT_EQ(zrt_pool_unlock(pool, b2), ZRT_ERR_INVALID_STATE);
  mentions("zrt_pool_unlock: buffer is not locked");
  EXPECT_EQ(p, sentinel);

  // Stats and destruction.
  zrt_pool_stats_t s;
  std::memset(&s, 0, sizeof s);
  s.field_mask = uint64_t{1} << 40;
  EXPECT_EQ(zrt_pool_stats(pool, &s), ZRT_ERR_INVALID_ARGUMENT);
  mentions("stats_p->field_mask has unknown bits 0x10000000000");
  EXPECT_EQ(zrt_pool_stats(pool, nullptr), ZRT_ERR_INVALID_ARGUMENT);
  mentions("stats_p is NULL");
  EXPECT_EQ(zrt_pool_destroy(pool), ZRT_ERR_INVALID_STATE);
  mentions("pool 'checked' still has 2 live allocation(s)");
  zrt_pool_h host = nullptr;
  zrt_context_pool(test::context(), ZRT_MEMORY_HOST, &host);
  EXPECT_EQ(zrt_pool_destroy(host), ZRT_ERR_INVALID_ARGUMENT);
  mentions("belongs to the context (zrt_context_pool); zrt_finalize destroys it");

  // Nothing above corrupted the pool.
  zrt_pool_stats_t after = stats_of(pool);
  EXPECT_EQ(after.allocations, 2u);
  EXPECT_EQ(after.out_of_memory_count, 2u);
  void *fresh = nullptr;
  EXPECT_EQ(zrt_pool_alloc(pool, MiB, ZRT_LIFETIME_TRANSIENT, &fresh), ZRT_SUCCESS);
  EXPECT_EQ(zrt_pool_free(pool, fresh), ZRT_SUCCESS);
  EXPECT_EQ(zrt_pool_free(pool, keep), ZRT_SUCCESS);
  EXPECT_EQ(zrt_pool_free_movable(pool, b2), ZRT_SUCCESS);
  EXPECT_EQ(zrt_pool_destroy(pool), ZRT_SUCCESS);
  EXPECT_EQ(zrt_pool_destroy(pool), ZRT_ERR_INVALID_HANDLE);
  mentions("is a stale pool handle");
}

// zrt_pool_alloc / zrt_pool_free find the calling thread's cache by the handle alone
// (find_thread_cache_by_handle): a cache of another pool, a destroyed pool's orphaned
// cache and a block cached idle must all still be refused with the checked path's words.
TEST(MemoryApi, FastPathChecksTheHandle) {
  zrt_pool_h a = make_pool(ZRT_MEMORY_HOST, 4 * MiB, ZRT_COMPACT_AUTO, "fast a");
  zrt_pool_h b = make_pool(ZRT_MEMORY_HOST, 4 * MiB, ZRT_COMPACT_AUTO, "fast b");
  void *pa = nullptr, *pb = nullptr, *again = nullptr;
  // Warm both caches: each pool has an idle 4 KiB block this thread may reuse.
  for (zrt_pool_h pool : {a, b}) {
    void *p = nullptr;
    ASSERT_EQ(zrt_pool_alloc(pool, 4 * KiB, ZRT_LIFETIME_TRANSIENT, &p), ZRT_SUCCESS);
    ASSERT_EQ(zrt_pool_free(pool, p), ZRT_SUCCESS);
  }
  ASSERT_EQ(zrt_pool_alloc(a, 4 * KiB, ZRT_LIFETIME_TRANSIENT, &pa), ZRT_SUCCESS);
  ASSERT_EQ(zrt_pool_alloc(b, 4 * KiB, ZRT_LIFETIME_TRANSIENT, &pb), ZRT_SUCCESS);
  std::memset(pa, 0xa5, 4 * KiB);
  // A's block through B's handle, with B's cache the last used and then A's.
  EXPECT_EQ(zrt_pool_free(b, pa), ZRT_ERR_INVALID_ARGUMENT);
  mentions("was not allocated by pool 'fast b'");
  ASSERT_EQ(zrt_pool_free(a, pa), ZRT_SUCCESS);
  ASSERT_EQ(zrt_pool_alloc(a, 4 * KiB, ZRT_LIFETIME_TRANSIENT, &again), ZRT_SUCCESS);
  EXPECT_EQ(again, pa);  // served by A's cache
  EXPECT_EQ(zrt_pool_free(a, pb), ZRT_ERR_INVALID_ARGUMENT);
  mentions("was not allocated by pool 'fast a'");
  // A block idle in the cache is not freed twice, nor by the other pool.
  ASSERT_EQ(zrt_pool_free(a, again), ZRT_SUCCESS);
  EXPECT_EQ(zrt_pool_free(a, again), ZRT_ERR_INVALID_ARGUMENT);
  mentions("(freed twice?)");
  ASSERT_EQ(zrt_pool_free(b, pb), ZRT_SUCCESS);
  zrt_pool_stats_t sa = stats_of(a), sb = stats_of(b);
  EXPECT_EQ(sa.allocations, 0u);
  EXPECT_EQ(sb.allocations, 0u);
  // A destroyed pool's cache was this thread's last; its stale handle must not reach it.
  void *p = nullptr;
  ASSERT_EQ(zrt_pool_alloc(a, 4 * KiB, ZRT_LIFETIME_TRANSIENT, &p), ZRT_SUCCESS);
  ASSERT_EQ(zrt_pool_free(a, p), ZRT_SUCCESS);
  ASSERT_EQ(zrt_pool_destroy(a), ZRT_SUCCESS);
  void *untouched = reinterpret_cast<void *>(0x1234);
  EXPECT_EQ(zrt_pool_alloc(a, 4 * KiB, ZRT_LIFETIME_TRANSIENT, &untouched), ZRT_ERR_INVALID_HANDLE);
  mentions("is a stale pool handle");
  EXPECT_EQ(untouched, reinterpret_cast<void *>(0x1234));
  EXPECT_EQ(zrt_pool_free(a, p), ZRT_ERR_INVALID_HANDLE);
  mentions("is a stale pool handle");
  EXPECT_EQ(zrt_pool_destroy(b), ZRT_SUCCESS);
}

TEST(MemoryApi, BadPoolParamsAreRefused) {
  zrt_pool_h pool = reinterpret_cast<zrt_pool_h>(0x1);
  zrt_pool_params_t p;
  std::memset(&p, 0, sizeof p);
  p.field_mask = uint64_t{1} << 20;
  EXPECT_EQ(zrt_pool_create(test::context(), &p, &pool), ZRT_ERR_INVALID_ARGUMENT);
  mentions("params->field_mask has unknown bits");
  p.field_mask = ZRT_POOL_PARAM_FIELD_ALIGNMENT;
  p.alignment = 96;
  EXPECT_EQ(zrt_pool_create(test::context(), &p, &pool), ZRT_ERR_INVALID_ARGUMENT);
  mentions("alignment is 96: accepted values are powers of two from 64 to 1048576");
  p.field_mask = ZRT_POOL_PARAM_FIELD_LIMIT_BYTES;
  p.limit_bytes = 0;
  EXPECT_EQ(zrt_pool_create(test::context(), &p, &pool), ZRT_ERR_INVALID_ARGUMENT);
  mentions("params->limit_bytes is 0");
  p.field_mask = ZRT_POOL_PARAM_FIELD_COMPACT;
  p.compact = static_cast<zrt_compact_t>(3);
  EXPECT_EQ(zrt_pool_create(test::context(), &p, &pool), ZRT_ERR_INVALID_ARGUMENT);
  mentions("params->compact is 3: accepted values are ZRT_COMPACT_AUTO");
  p.field_mask = ZRT_POOL_PARAM_FIELD_NAME;
  p.name = nullptr;
  EXPECT_EQ(zrt_pool_create(test::context(), &p, &pool), ZRT_ERR_INVALID_ARGUMENT);
  mentions("params->name is NULL");
  EXPECT_EQ(zrt_pool_create(test::context(), nullptr, nullptr), ZRT_ERR_INVALID_ARGUMENT);
  mentions("pool_p is NULL");
  EXPECT_EQ(pool, reinterpret_cast<zrt_pool_h>(0x1));
}

TEST(MemoryApi, PinnedMemoryExhaustedIsAClearStatus) {
  zrt_pool_h small = make_pool(ZRT_MEMORY_PINNED_HOST, 2 * MiB, ZRT_COMPACT_AUTO, "small pinned");
  void *p = nullptr;
  EXPECT_EQ(zrt_pool_alloc(small, 3 * MiB, ZRT_LIFETIME_LONG, &p), ZRT_ERR_OUT_OF_MEMORY);
  mentions("pool 'small pinned' cannot allocate 3 MiB");
  zrt_offload_params_t o;
  std::memset(&o, 0, sizeof o);
  o.field_mask = ZRT_OFFLOAD_PARAM_FIELD_POOL | ZRT_OFFLOAD_PARAM_FIELD_RING_BYTES;
  o.pool = small;
  o.ring_bytes = 4 * MiB;
  zrt_offload_h off = nullptr;
  EXPECT_EQ(zrt_offload_create(test::context(), &o, &off), ZRT_ERR_OUT_OF_MEMORY);
  mentions(
      "zrt_offload_create: pinned memory for the offload ring of 4 MiB "
      "(params->ring_bytes) is not available");
  EXPECT_EQ(off, nullptr);
  zrt_pool_h host = nullptr;
  zrt_context_pool(test::context(), ZRT_MEMORY_HOST, &host);
  o.pool = host;
  EXPECT_EQ(zrt_offload_create(test::context(), &o, &off), ZRT_ERR_INVALID_ARGUMENT);
  mentions("offload needs a ZRT_MEMORY_PINNED_HOST pool");
  // The small pool is unharmed and still serves what fits.
  ASSERT_EQ(zrt_pool_alloc(small, MiB, ZRT_LIFETIME_LONG, &p), ZRT_SUCCESS);
  EXPECT_EQ(zrt_pool_free(small, p), ZRT_SUCCESS);
  EXPECT_EQ(zrt_pool_destroy(small), ZRT_SUCCESS);
}

// The ZeRO engine takes its state and buffers from the context's host pool: they show in
// its stats while the engine lives and are given back when it is destroyed. With node-shared
// buffers (the default) the gradients, which stage 0 all-reduces in place, come from the
// engine's own window pool instead, listed with the context's pools while the engine lives.
// Collective.
TEST(MemoryApi, EngineStateComesFromTheContextHostPool) {
  zrt_pool_h host = nullptr;
  ASSERT_EQ(zrt_context_pool(test::context(), ZRT_MEMORY_HOST, &host), ZRT_SUCCESS);
  auto user_pools = [] { return context_description()["memory"]["user_pools"].get<int>(); };
  for (int shared : {0, 1}) {
    SCOPED_TRACE(shared ? "node-shared buffers" : "private buffers");
    const size_t before = stats_of(host).live_bytes;
    const int pools_before = user_pools();

    zrt_engine_params_t params;
    std::memset(&params, 0, sizeof params);
    params.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE | ZRT_ENGINE_PARAM_FIELD_SHARED_BUFFERS;
    params.stage = 0;  // every rank holds all of it: parameters, gradients, two Adam moments
    params.shared_buffers = shared;
    zrt_engine_h engine = nullptr;
    zrt_param_h w = nullptr;
    const int64_t shape[2] = {256, 1024};  // 1 MiB of fp32
    bool ok = zrt_engine_create(test::context(), &params, &engine) == ZRT_SUCCESS &&
              zrt_param_register(engine, "w", ZRT_DTYPE_FP32, 2, shape, &w) == ZRT_SUCCESS &&
              zrt_engine_commit(engine) == ZRT_SUCCESS;
    EXPECT_TRUE(ok) << test::last_error();
    zrt_memory_report_t m{};
    m.field_mask = ZRT_MEMORY_REPORT_FIELD_ALL;
    if (ok) {
      EXPECT_EQ(zrt_engine_memory(engine, &m), ZRT_SUCCESS);
    }
    const size_t during = stats_of(host).live_bytes;
    if (m.node_shared_ranks > 0) {
      EXPECT_EQ(shared, 1);
      EXPECT_EQ(m.node_shared_bytes, static_cast<int64_t>(MiB));  // the gradients
      EXPECT_GE(during, before + 3 * MiB);
      EXPECT_EQ(user_pools(), pools_before + 1);
    } else {
      EXPECT_EQ(m.node_shared_bytes, 0);
      EXPECT_GE(during, before + 4 * MiB);
      EXPECT_EQ(user_pools(), pools_before);
    }
    if (engine != nullptr) {
      EXPECT_EQ(zrt_engine_destroy(engine), ZRT_SUCCESS);
    }
    EXPECT_EQ(stats_of(host).live_bytes, before);
    EXPECT_EQ(user_pools(), pools_before);
  }
  EXPECT_TRUE(test::all_ranks(!HasFailure()));
}

TEST(OffloadApi, RoundTripThroughTheContextEngine) {
  zrt_offload_h off = nullptr, again = nullptr;
  ASSERT_EQ(zrt_context_offload(test::context(), &off), ZRT_SUCCESS) << test::last_error();
  ASSERT_EQ(zrt_context_offload(test::context(), &again), ZRT_SUCCESS);
  EXPECT_EQ(off, again);
  std::vector<std::vector<float>> acts;
  std::vector<zrt_offload_token_h> tokens;
  for (int layer = 0; layer < 6; ++layer) {
    acts.emplace_back(1000 * (layer + 1) + 3);
    for (size_t i = 0; i < acts.back().size(); ++i)
      acts.back()[i] = static_cast<float>(layer * 1e6 + static_cast<double>(i) + test::rank());
    zrt_offload_token_h t = nullptr;
    ASSERT_EQ(zrt_offload_push(off, acts.back().data(), acts.back().size() * sizeof(float), &t),
              ZRT_SUCCESS);
    tokens.push_back(t);
  }
  ASSERT_EQ(zrt_offload_wait(off, tokens.back()), ZRT_SUCCESS);
  EXPECT_EQ(zrt_offload_test(off, tokens.back()), ZRT_SUCCESS);
  zrt_offload_stats_t s;
  std::memset(&s, 0, sizeof s);
  s.field_mask = ZRT_OFFLOAD_STATS_FIELD_ALL;
  ASSERT_EQ(zrt_offload_stats(off, &s), ZRT_SUCCESS);
  EXPECT_EQ(s.tokens, 6u);
  EXPECT_EQ(s.ring_bytes, 8 * MiB);  // ZRT_OFFLOAD_RING_BYTES=8M in this test's environment
  EXPECT_STREQ(s.engine, "thread");
  for (int layer = 5; layer >= 0; --layer) {
    if (layer > 0) {
      EXPECT_EQ(zrt_offload_prefetch(off, tokens[layer - 1]), ZRT_SUCCESS);
    }
    std::vector<float> back(acts[layer].size(), -1.0f);
    ASSERT_EQ(zrt_offload_fetch(off, tokens[layer], back.data()), ZRT_SUCCESS);
    EXPECT_EQ(back, acts[layer]);
  }
  ASSERT_EQ(zrt_offload_stats(off, &s), ZRT_SUCCESS);
  EXPECT_EQ(s.pushes, 6u);
  EXPECT_EQ(s.fetches, 6u);
  EXPECT_EQ(s.tokens, 0u);
  EXPECT_EQ(s.offloaded_bytes, 0u);
  EXPECT_GT(s.peak_offloaded_bytes, 0u);
  EXPECT_EQ(zrt_offload_destroy(off), ZRT_ERR_INVALID_ARGUMENT);
  mentions("belongs to the context (zrt_context_offload)");
}

TEST(OffloadApi, BadTokensAndFullRings) {
  zrt_offload_params_t o;
  std::memset(&o, 0, sizeof o);
  o.field_mask = ZRT_OFFLOAD_PARAM_FIELD_RING_BYTES | ZRT_OFFLOAD_PARAM_FIELD_PREFETCH_DEPTH;
  o.ring_bytes = MiB;
  o.prefetch_depth = 1;
  zrt_offload_h off = nullptr;
  ASSERT_EQ(zrt_offload_create(test::context(), &o, &off), ZRT_SUCCESS) << test::last_error();
  std::vector<char> a(700 * KiB, 'a'), out(700 * KiB);
  zrt_offload_token_h t = nullptr, none = nullptr;
  ASSERT_EQ(zrt_offload_push(off, a.data(), a.size(), &t), ZRT_SUCCESS);
  EXPECT_EQ(zrt_offload_push(off, a.data(), a.size(), &none), ZRT_ERR_OUT_OF_MEMORY);
  mentions("zrt_offload_push: the offload ring has no room for 700 KiB");
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(zrt_offload_push(off, nullptr, 10, &none), ZRT_ERR_INVALID_ARGUMENT);
  mentions("src is NULL");
  EXPECT_EQ(zrt_offload_push(off, a.data(), 0, &none), ZRT_ERR_INVALID_ARGUMENT);
  mentions("bytes is 0");
  EXPECT_EQ(zrt_offload_fetch(off, nullptr, out.data()), ZRT_ERR_INVALID_HANDLE);
  mentions("token is a NULL offload token");
  EXPECT_EQ(zrt_offload_fetch(nullptr, t, out.data()), ZRT_ERR_INVALID_HANDLE);
  mentions("offload is a NULL offload engine handle");
  EXPECT_EQ(zrt_offload_prefetch_into(off, t, nullptr), ZRT_ERR_INVALID_ARGUMENT);
  mentions("zrt_offload_prefetch_into: dst is NULL");
  ASSERT_EQ(zrt_offload_prefetch_into(off, t, out.data()), ZRT_SUCCESS);
  ASSERT_EQ(zrt_offload_fetch(off, t, out.data()), ZRT_SUCCESS);
  EXPECT_EQ(out, a);
  EXPECT_EQ(zrt_offload_fetch(off, t, out.data()), ZRT_ERR_INVALID_HANDLE);
  mentions("stale offload token: it was already fetched or discarded");
  EXPECT_EQ(zrt_offload_discard(off, t), ZRT_ERR_INVALID_HANDLE);
  o.prefetch_depth = 0;
  zrt_offload_h bad = nullptr;
  EXPECT_EQ(zrt_offload_create(test::context(), &o, &bad), ZRT_ERR_INVALID_ARGUMENT);
  mentions("prefetch_depth is 0: accepted values are 1 .. 64");
  // A token in flight is discarded with its engine.
  ASSERT_EQ(zrt_offload_push(off, a.data(), a.size(), &t), ZRT_SUCCESS);
  EXPECT_EQ(zrt_offload_destroy(off), ZRT_SUCCESS);
  EXPECT_EQ(zrt_offload_push(off, a.data(), 10, &t), ZRT_ERR_INVALID_HANDLE);
  mentions("is a stale offload engine handle");
}
