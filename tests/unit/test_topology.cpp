#include <gtest/gtest.h>
#include <hwloc.h>

#include "runtime/topology.hpp"

using namespace zrt;

TEST(Topology, DiscoversCoresAndLeavesBindingAloneWithNone) {
  NodeLayout layout;
  Topology t(layout, "none");
  ASSERT_TRUE(t.loaded());
  EXPECT_GT(t.cores(), 0);
  EXPECT_GE(t.pus(), t.cores());
  EXPECT_GE(t.numa_nodes(), 1);
  EXPECT_NE(t.bound_by(), ZRT_BOUND_BY_ZERORT);
  EXPECT_FALSE(t.binding().empty());
  nlohmann::json j = t.to_json();
  EXPECT_EQ(j["cores"].get<int>(), t.cores());
  EXPECT_TRUE(j.contains("gpus"));
  EXPECT_TRUE(j.contains("nics"));
}

TEST(Topology, BindsEachLocalRankToItsShareOfTheCores) {
  // Pretend to be the last of two ranks on this node.
  NodeLayout first;
  Topology whole(first, "none");
  if (whole.pus() < 2) GTEST_SKIP() << "needs two processing units";
  NodeLayout layout;
  layout.local_size = 2;
  layout.local_rank = 1;
  Topology t(layout, "core");
  EXPECT_EQ(t.bound_by(), ZRT_BOUND_BY_ZERORT);
  EXPECT_LT(t.bound_pus(), whole.pus());
  EXPECT_GE(t.bound_pus(), 1);
  // The binding is real: the OS reports it too.
  hwloc_topology_t topo = t.hwloc();
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  ASSERT_EQ(hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS), 0);
  EXPECT_EQ(hwloc_bitmap_weight(set), t.bound_pus());
  // Restore the whole machine for the tests that follow.
  hwloc_set_cpubind(topo, hwloc_topology_get_allowed_cpuset(topo), HWLOC_CPUBIND_PROCESS);
  hwloc_bitmap_free(set);
}

TEST(Topology, AutoKeepsALauncherBinding) {
  NodeLayout first;
  Topology whole(first, "none");
  if (whole.pus() < 2) GTEST_SKIP() << "needs two processing units";
  hwloc_topology_t topo = whole.hwloc();
  hwloc_bitmap_t one = hwloc_bitmap_alloc();
  hwloc_bitmap_only(
      one, static_cast<unsigned>(hwloc_bitmap_first(hwloc_topology_get_allowed_cpuset(topo))));
  ASSERT_EQ(hwloc_set_cpubind(topo, one, HWLOC_CPUBIND_PROCESS), 0);  // the "launcher"
  NodeLayout layout;
  layout.local_size = 2;
  layout.local_rank = 1;
  Topology t(layout, "auto");
  EXPECT_EQ(t.bound_by(), ZRT_BOUND_BY_LAUNCHER);
  EXPECT_EQ(t.bound_pus(), 1);
  hwloc_set_cpubind(topo, hwloc_topology_get_allowed_cpuset(topo), HWLOC_CPUBIND_PROCESS);
  hwloc_bitmap_free(one);
}
