// memory/memory_limits: the limits read from fake /proc and /sys trees (cgroup v2, v1, the
// hybrid layout, a container's view, unlimited and unreadable files), the rlimits, the
// process's use, and the room and pool limit derived from them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "memory/memory_limits.hpp"
#include "sizes.hpp"

namespace zrt {
namespace {

constexpr size_t kGiB = 1024 * MiB;

// A fake root: files written under a folder named for the process and the test.
class FakeRoot {
 public:
  FakeRoot() {
    const auto *test = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = std::filesystem::temp_directory_path() /
            ("zrt-limits-" + std::to_string(getpid()) + "-" + test->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  ~FakeRoot() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  void write(const std::string &path, const std::string &text) const {
    const std::filesystem::path file = root_ / std::filesystem::path(path).relative_path();
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  void folder(const std::string &path) const {
    std::filesystem::create_directories(root_ / std::filesystem::path(path).relative_path());
  }
  LimitSources sources(size_t physical = 16 * kGiB) const {
    LimitSources s;
    s.root = root_;
    s.physical_bytes = physical;
    return s;
  }

 private:
  std::filesystem::path root_;
};

const std::string kV2Mount = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n";

std::vector<MemoryLimit> cgroup_limits(const std::vector<MemoryLimit> &all) {
  std::vector<MemoryLimit> out;
  for (const MemoryLimit &l : all)
    if (l.kind == MemoryLimitKind::Cgroup) out.push_back(l);
  return out;
}

TEST(MemoryLimits, PhysicalMemoryIsAlwaysTheFirstLimit) {
  FakeRoot fake;  // an empty tree: no /proc, no /sys
  const auto limits = discover_memory_limits(fake.sources(8 * kGiB));
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_EQ(limits[0].kind, MemoryLimitKind::Physical);
  EXPECT_EQ(limits[0].bytes, 8 * kGiB);
}

TEST(MemoryLimits, CgroupV2TakesTheSmallestLimitOnThePathUp) {
  FakeRoot fake;
  fake.write("/proc/self/cgroup", "0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_1\n");
  fake.write("/proc/self/mountinfo", kV2Mount);
  const std::string job = "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_42";
  fake.write(job + "/step_0/user/task_1/memory.max", "max\n");
  fake.folder(job + "/step_0/user");  // no memory.max: not a limit
  fake.write(job + "/step_0/memory.max", "2147483648\n");
  fake.write(job + "/memory.max", "1610612736\n");
  fake.write("/sys/fs/cgroup/system.slice/memory.max", "max\n");
  const auto limits = cgroup_limits(discover_memory_limits(fake.sources()));
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_EQ(limits[0].bytes, 1536 * MiB);
  EXPECT_EQ(limits[0].file, job + "/memory.max");
}

TEST(MemoryLimits, CgroupV2MaxEverywhereIsNoLimit) {
  FakeRoot fake;
  fake.write("/proc/self/cgroup", "0::/user.slice/session-1.scope\n");
  fake.write("/proc/self/mountinfo", kV2Mount);
  fake.write("/sys/fs/cgroup/user.slice/session-1.scope/memory.max", "max\n");
  fake.write("/sys/fs/cgroup/user.slice/memory.max", "max\n");
  EXPECT_TRUE(cgroup_limits(discover_memory_limits(fake.sources())).empty());
}

TEST(MemoryLimits, CgroupV1MemoryHierarchyOfAHybridSystem) {
  FakeRoot fake;
  // The v2 hierarchy holds no memory controller here: its folders have no memory.max.
  fake.write("/proc/self/cgroup",
             "9:name=systemd:/\n5:cpu,cpuacct:/\n4:memory:/process_api/abc\n0::/\n");
  fake.write("/proc/self/mountinfo",
             "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
             "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
             "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n");
  fake.folder("/sys/fs/cgroup/unified");
  fake.write("/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  fake.write("/sys/fs/cgroup/memory/process_api/memory.limit_in_bytes", "9223372036854771712\n");
  fake.write("/sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes", "1073741824\n");
  const auto limits = cgroup_limits(discover_memory_limits(fake.sources()));
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_EQ(limits[0].bytes, kGiB);
  EXPECT_EQ(limits[0].file, "/sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes");
}

TEST(MemoryLimits, CgroupV1UnlimitedIsNoLimit) {
  FakeRoot fake;
  fake.write("/proc/self/cgroup", "4:memory:/a\n");
  fake.write("/proc/self/mountinfo",
             "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
  fake.write("/sys/fs/cgroup/memory/a/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_TRUE(cgroup_limits(discover_memory_limits(fake.sources())).empty());
}

TEST(MemoryLimits, AContainerSeesItsCgroupAtTheMountsTop) {
  FakeRoot fake;
  // Without a cgroup namespace: the path is the host's, the mount's root is the container's.
  fake.write("/proc/self/cgroup", "0::/docker/abc123\n");
  fake.write("/proc/self/mountinfo",
             "500 400 0:26 /docker/abc123 /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n");
  fake.write("/sys/fs/cgroup/memory.max", "4294967296\n");
  auto limits = cgroup_limits(discover_memory_limits(fake.sources()));
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_EQ(limits[0].bytes, 4 * kGiB);
  EXPECT_EQ(limits[0].file, "/sys/fs/cgroup/memory.max");
  // With one: the process is at the root of what it sees.
  fake.write("/proc/self/cgroup", "0::/\n");
  fake.write("/proc/self/mountinfo", kV2Mount);
  limits = cgroup_limits(discover_memory_limits(fake.sources()));
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_EQ(limits[0].file, "/sys/fs/cgroup/memory.max");
}

TEST(MemoryLimits, WithoutMountinfoTheUsualPlacesAreRead) {
  FakeRoot fake;
  fake.write("/proc/self/cgroup", "0::/job\n");
  fake.write("/sys/fs/cgroup/job/memory.max", "536870912\n");
  const auto limits = cgroup_limits(discover_memory_limits(fake.sources()));
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_EQ(limits[0].bytes, 512 * MiB);
}

TEST(MemoryLimits, UnreadableOrOddFilesLimitNothing) {
  FakeRoot fake;
  fake.write("/proc/self/cgroup", "garbage\n0::/job\n::\n");
  fake.write("/proc/self/mountinfo", "short line\n" + kV2Mount + "1 2 3 4 5 - \n");
  fake.write("/sys/fs/cgroup/job/memory.max", "12abc\n");
  fake.folder("/sys/fs/cgroup/memory.max");  // a folder, not a file
  EXPECT_TRUE(cgroup_limits(discover_memory_limits(fake.sources())).empty());
}

TEST(MemoryLimits, EscapedMountPointsAreUnescaped) {
  FakeRoot fake;
  fake.write("/proc/self/cgroup", "0::/j\n");
  fake.write("/proc/self/mountinfo", "30 23 0:26 / /cg\\040root rw - cgroup2 cgroup2 rw\n");
  fake.write("/cg root/j/memory.max", "1073741824\n");
  const auto limits = cgroup_limits(discover_memory_limits(fake.sources()));
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_EQ(limits[0].file, "/cg root/j/memory.max");
}

TEST(MemoryLimits, FiniteRlimitsAreLimits) {
  FakeRoot fake;
  LimitSources s = fake.sources();
  s.rlimit_as = 4 * kGiB;
  s.rlimit_data = 3 * kGiB;
  const auto limits = discover_memory_limits(s);
  ASSERT_EQ(limits.size(), 3u);
  EXPECT_EQ(limits[1].kind, MemoryLimitKind::AddressSpace);
  EXPECT_EQ(limits[1].bytes, 4 * kGiB);
  EXPECT_EQ(limits[2].kind, MemoryLimitKind::Data);
  EXPECT_EQ(limits[2].bytes, 3 * kGiB);
}

TEST(MemoryLimits, ProcessUsageComesFromStatus) {
  FakeRoot fake;
  fake.write("/proc/self/status",
             "Name:\tzrt-gpt2\nVmPeak:\t  900000 kB\nVmSize:\t  819200 kB\nVmHWM:\t 2048 kB\n"
             "VmRSS:\t  102400 kB\nVmData:\t  204800 kB\nVmStk:\t 132 kB\n");
  const ProcessUsage u = read_process_usage(fake.sources().root);
  EXPECT_EQ(u.resident, 100 * MiB);
  EXPECT_EQ(u.mapped, 800 * MiB);
  EXPECT_EQ(u.data, 200 * MiB);
  const ProcessUsage none = read_process_usage(fake.sources().root / "nowhere");
  EXPECT_EQ(none.resident + none.mapped + none.data, 0u);
}

TEST(MemoryLimits, TheTightestLimitLeavesTheLeastRoomForThisRank) {
  std::vector<MemoryLimit> limits = {
      {MemoryLimitKind::Physical, 16 * kGiB, "", 4},  // 4 GiB each
      {MemoryLimitKind::Cgroup, 6 * kGiB, "/c", 2},   // 3 GiB each
      {MemoryLimitKind::AddressSpace, 100 * kGiB, "", 1},
  };
  ProcessUsage u{kGiB, 50 * kGiB, kGiB};
  EXPECT_EQ(used_under(limits[0], u), kGiB);
  EXPECT_EQ(used_under(limits[2], u), 50 * kGiB);
  EXPECT_EQ(room_under(limits[1], u), 2 * kGiB);
  EXPECT_EQ(tightest_limit(limits, u).kind, MemoryLimitKind::Cgroup);
  u.mapped = 99 * kGiB;
  EXPECT_EQ(tightest_limit(limits, u).kind, MemoryLimitKind::AddressSpace);
  u.resident = 5 * kGiB;  // more than its share: no room, not a wrap-around
  EXPECT_EQ(room_under(limits[1], u), 0u);
}

TEST(MemoryLimits, DescriptionsNameTheLimitItsFileAndHowToRaiseIt) {
  EXPECT_EQ(describe_limit({MemoryLimitKind::Cgroup, 1536 * MiB, "/sys/fs/cgroup/j/memory.max", 2}),
            "the memory cgroup's limit of 1.5 GiB (/sys/fs/cgroup/j/memory.max), shared by 2 "
            "ranks on this node");
  EXPECT_EQ(describe_limit({MemoryLimitKind::AddressSpace, 4 * kGiB, "", 1}),
            "RLIMIT_AS (ulimit -v) of 4 GiB");
  EXPECT_NE(std::string(how_to_raise(MemoryLimitKind::Cgroup)).find("Slurm: --mem"),
            std::string::npos);
  EXPECT_NE(std::string(how_to_raise(MemoryLimitKind::AddressSpace)).find("ulimit -v"),
            std::string::npos);
}

TEST(MemoryLimits, APoolsDefaultLimitIsWhatTheProcessMayUse) {
  const size_t headroom = limit_headroom(2);
  EXPECT_EQ(headroom, 256 * MiB + 2 * 72 * MiB);
  std::vector<MemoryLimit> limits = {{MemoryLimitKind::Physical, 16 * kGiB, "", 4}};
  ProcessUsage u{kGiB, 2 * kGiB, kGiB};
  // Physical memory and a cgroup: the whole limit (the kernel counts only what is used).
  PoolLimit p = default_pool_limit(limits, u, headroom);
  EXPECT_EQ(p.bytes, 16 * kGiB);
  EXPECT_EQ(p.why, "the node's physical memory");
  limits.push_back({MemoryLimitKind::Cgroup, 6 * kGiB, "/c/memory.max", 2});
  p = default_pool_limit(limits, u, headroom);
  EXPECT_EQ(p.bytes, 6 * kGiB);
  EXPECT_EQ(p.why, "the memory cgroup's limit (/c/memory.max)");
  // RLIMIT_AS: half of what is left after what is mapped and the headroom, since the pools'
  // reservations count whole.
  limits.push_back({MemoryLimitKind::AddressSpace, 8 * kGiB, "", 1});
  p = default_pool_limit(limits, u, headroom);
  EXPECT_EQ(p.bytes, (6 * kGiB - headroom) / 2);
  EXPECT_NE(p.why.find("half of what RLIMIT_AS (ulimit -v) of 8 GiB leaves free"),
            std::string::npos)
      << p.why;
  // RLIMIT_DATA: what is left after the private writable memory and the headroom.
  limits.push_back({MemoryLimitKind::Data, 2 * kGiB, "", 1});
  p = default_pool_limit(limits, u, headroom);
  EXPECT_EQ(p.bytes, kGiB - headroom);
  EXPECT_NE(p.why.find("RLIMIT_DATA (ulimit -d) of 2 GiB"), std::string::npos) << p.why;
  // Nothing left: 0, not a wrap-around (the pool then takes its floor).
  u.data = 3 * kGiB;
  EXPECT_EQ(default_pool_limit(limits, u, headroom).bytes, 0u);
}

}  // namespace
}  // namespace zrt
