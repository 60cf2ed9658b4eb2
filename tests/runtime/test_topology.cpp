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

namespace {
zrt::TopologyDevice gpu(int cuda_index, bool near) {
  zrt::TopologyDevice d;
  d.kind = "gpu";
  d.cuda_index = cuda_index;
  d.near = near;
  return d;
}
}  // namespace

TEST(Topology, LocalRanksTakeTurnsAmongTheNearGpus) {
  // 8 GPUs, 4 on each socket; a rank on socket 1 sees GPUs 4-7 as near.
  std::vector<zrt::TopologyDevice> gpus;
  for (int i = 0; i < 8; ++i)
    gpus.push_back(gpu(i, i >= 4));
  EXPECT_EQ(zrt::pick_device(gpus, 4, false), 4);
  EXPECT_EQ(zrt::pick_device(gpus, 7, false), 7);
  for (auto &g : gpus)
    g.near = false;  // no binding known: all of them, by local rank
  EXPECT_EQ(zrt::pick_device(gpus, 5, false), 5);
  EXPECT_EQ(zrt::pick_device({}, 0, false), -1);
}

TEST(Topology, OnlyGpusTheCudaRuntimeShowsAreCandidates) {
  // CUDA_VISIBLE_DEVICES=2 for this task (Slurm's --gpu-bind): hwloc lists 4 GPUs, the CUDA
  // runtime shows one, as its device 0. Local rank 3 must get that one, not hwloc's 4th.
  std::vector<zrt::TopologyDevice> gpus = {gpu(-1, true), gpu(-1, true), gpu(0, true),
                                           gpu(-1, true)};
  EXPECT_EQ(zrt::pick_device(gpus, 3, false), 2);
  EXPECT_EQ(zrt::pick_device(gpus, 0, false), 2);
  // Two visible (CUDA_VISIBLE_DEVICES=1,3), local ranks 0 and 1 of the task pair.
  gpus = {gpu(-1, true), gpu(0, true), gpu(-1, true), gpu(1, true)};
  EXPECT_EQ(zrt::pick_device(gpus, 0, false), 1);
  EXPECT_EQ(zrt::pick_device(gpus, 1, false), 3);
  // None visible (no CUDA runtime, or a build without it): hwloc's list as it is.
  gpus = {gpu(-1, true), gpu(-1, true)};
  EXPECT_EQ(zrt::pick_device(gpus, 1, false), 1);
}
