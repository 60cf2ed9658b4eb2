// The CUDA paths of the memory layer. They are compiled into every CUDA build and skip
// cleanly where no GPU is usable (a build machine, a CPU-only node).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "../device_required.hpp"
#include "memory/cuda/cuda_memory.hpp"
#include "memory/offload.hpp"
#include "pool_test_util.hpp"
#include "sizes.hpp"

using namespace zrt;

namespace {

std::unique_ptr<Pool> device_pool(size_t limit) {
  std::string why;
  auto r = make_cuda_device_resource(0, &why);
  if (!r) return nullptr;
  PoolOptions o;
  o.name = "device";
  o.limit = limit;
  o.segment_bytes = 64 * MiB;
  return std::make_unique<Pool>(std::move(r), o);
}

}  // namespace

TEST(CudaMemory, FactoriesSayWhyThereIsNoGpu) {
  std::string why;
  auto r = make_cuda_device_resource(0, &why);
  if (r) GTEST_SKIP() << "a GPU is usable here";
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(make_cuda_copy_engine(0, &why), nullptr);
  EXPECT_EQ(make_cuda_pinned_resource(0, &why), nullptr);
}

TEST(CudaMemory, DevicePoolCompactsAndKeepsContents) {
  auto pool = device_pool(512 * MiB);
  std::string why;
  if (!pool) {
    make_cuda_device_resource(0, &why);
    ZRT_NO_DEVICE(why);
  }
  auto copy = make_cuda_copy_engine(0, &why);
  ASSERT_NE(copy, nullptr) << why;
  std::vector<BufferId> ids;
  std::vector<std::vector<unsigned char>> data;
  for (int i = 0; i < 16; ++i) {
    ids.push_back(pool->allocate_movable(3 * MiB + 100, Lifetime::Long));
    data.emplace_back(3 * MiB + 100);
    pooltest::fill(data.back().data(), data.back().size(), i);
    copy->copy(pool->pointer(ids.back()), data.back().data(), data.back().size());
  }
  for (int i = 0; i < 16; i += 2)
    pool->free(ids[i]);
  EXPECT_GT(pool->defragment(), 0u);
  for (int i = 1; i < 16; i += 2) {
    std::vector<unsigned char> back(data[i].size());
    copy->copy(back.data(), pool->pointer(ids[i]), back.size());
    EXPECT_EQ(back, data[i]) << "buffer " << i;
    pool->free(ids[i]);
  }
  pool->check();
  EXPECT_GT(pool->trim(), 0u);
}

TEST(CudaMemory, OffloadFromDeviceMemoryCountsTheDeviceBytesSaved) {
  auto device = device_pool(512 * MiB);
  std::string why;
  if (!device) {
    make_cuda_device_resource(0, &why);
    ZRT_NO_DEVICE(why);
  }
  PoolOptions p;
  p.name = "pinned";
  p.limit = 256 * MiB;
  Pool pinned(make_cuda_pinned_resource(0, &why), p);
  OffloadOptions o;
  o.ring_bytes = 64 * MiB;
  Offload off(
      pinned, [&](MemorySpace) -> Pool & { return *device; }, make_cuda_copy_engine(0, &why), o);
  auto engine = make_cuda_copy_engine(0, &why);
  std::vector<unsigned char> host(8 * MiB + 3);
  pooltest::fill(host.data(), host.size(), 9);
  void *act = device->allocate(host.size(), Lifetime::Transient);
  engine->copy(act, host.data(), host.size());
  uint64_t t = off.push(act, host.size());
  EXPECT_EQ(off.stats().device_saved, host.size());
  off.prefetch(t);
  void *back = device->allocate(host.size(), Lifetime::Transient);
  off.fetch(t, back);
  std::vector<unsigned char> check(host.size());
  engine->copy(check.data(), back, check.size());
  EXPECT_EQ(check, host);
  EXPECT_EQ(off.stats().device_saved, 0u);
  EXPECT_EQ(off.stats().peak_device_saved, host.size());
  EXPECT_STREQ(off.stats().engine, "cuda");
  device->free(act);
  device->free(back);
}
