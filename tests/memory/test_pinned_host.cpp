// Pinned host memory without CUDA: NUMA binding through hwloc, mlock, the fallback to
// pageable memory when mlock is refused, and a pinned pool that runs out.
#include <gtest/gtest.h>
#include <hwloc.h>

#include <cerrno>

#include "memory/pinned_host_resource.hpp"
#include "pool_test_util.hpp"
#include "runtime/log.hpp"
#include "runtime/topology.hpp"
#include "sizes.hpp"

using namespace zrt;
using pooltest::fails_with;

namespace {

std::unique_ptr<Pool> pinned_pool(PinnedHostOptions o, size_t limit) {
  PoolOptions p;
  p.name = "pinned";
  p.limit = limit;
  p.segment_bytes = MiB;
  return std::make_unique<Pool>(std::make_unique<PinnedHostResource>(std::move(o)), p);
}

}  // namespace

TEST(PinnedHost, LocksAndBindsItsSegmentsToTheNumaNode) {
  NodeLayout layout;
  Topology topology(layout, "none");
  ASSERT_TRUE(topology.loaded());
  hwloc_obj_t node = hwloc_get_obj_by_type(topology.hwloc(), HWLOC_OBJ_NUMANODE, 0);
  ASSERT_NE(node, nullptr);
  PinnedHostOptions o;
  o.topology = topology.hwloc();
  o.numa_node = static_cast<int>(node->os_index);
  auto pool = pinned_pool(o, 16 * MiB);
  auto *p = static_cast<char *>(pool->allocate(3 * MiB, Lifetime::Long));
  for (size_t i = 0; i < 3 * MiB; i += 4096)
    p[i] = 1;
  const auto &r = dynamic_cast<const PinnedHostResource &>(pool->resource());
  // mlock either worked, or it was refused and the pool said so: never silently unpinned.
  EXPECT_EQ(r.page_locked(), r.warnings().empty());
  PoolStats s = pool->stats();
  EXPECT_EQ(s.page_locked, r.page_locked());
  EXPECT_EQ(s.space, MemorySpace::PinnedHost);
  EXPECT_EQ(s.numa_node, o.numa_node);
  // The OS agrees on where the pages are.
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (hwloc_get_area_memlocation(topology.hwloc(), p, 3 * MiB, set, HWLOC_MEMBIND_BYNODESET) == 0) {
    EXPECT_TRUE(hwloc_bitmap_isset(set, node->os_index));
  }
  hwloc_bitmap_free(set);
  pool->free(p);
}

TEST(PinnedHost, RefusedMlockWarnsOnceAndFallsBackToPageableMemory) {
  PinnedHostOptions o;
  int calls = 0;
  o.lock = [&](const void *, size_t) {
    ++calls;
    errno = ENOMEM;
    return -1;
  };
  auto pool = pinned_pool(o, 16 * MiB);
  zrt::log::Level level = zrt::log::level();
  zrt::log::set_level(ZRT_LOG_ERROR);
  void *a = pool->allocate(2 * MiB, Lifetime::Long);
  void *b = pool->allocate(3 * MiB, Lifetime::Transient);
  zrt::log::set_level(level);
  const auto &r = dynamic_cast<const PinnedHostResource &>(pool->resource());
  ASSERT_EQ(r.warnings().size(), 1u);
  EXPECT_NE(r.warnings()[0].find("RLIMIT_MEMLOCK is"), std::string::npos) << r.warnings()[0];
  EXPECT_NE(r.warnings()[0].find("ulimit -l"), std::string::npos);
  EXPECT_EQ(calls, 1);  // after the first refusal it stops trying
  EXPECT_FALSE(pool->stats().page_locked);
  // The memory works all the same.
  pooltest::fill(a, 2 * MiB, 1);
  pooltest::fill(b, 3 * MiB, 2);
  EXPECT_TRUE(pooltest::holds(a, 2 * MiB, 1));
  EXPECT_TRUE(pooltest::holds(b, 3 * MiB, 2));
  pool->free(a);
  pool->free(b);
  pool->check();
}

TEST(PinnedHost, ExhaustedPinnedMemoryIsAClearError) {
  PinnedHostOptions o;
  auto pool = pinned_pool(o, 4 * MiB);
  EXPECT_TRUE(fails_with([&] { pool->allocate(5 * MiB, Lifetime::Long); }, ZRT_ERR_OUT_OF_MEMORY,
                         "pool 'pinned' cannot allocate 5 MiB"));
  void *a = pool->allocate(3 * MiB, Lifetime::Long);
  EXPECT_TRUE(fails_with([&] { pool->allocate(2 * MiB, Lifetime::Long); }, ZRT_ERR_OUT_OF_MEMORY,
                         "reached its limit of 4 MiB"));
  // Nothing was corrupted: what fits still works.
  void *b = pool->allocate(MiB, Lifetime::Transient);
  pool->check();
  pool->free(a);
  pool->free(b);
}
