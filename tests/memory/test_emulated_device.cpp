// The emulated device (memory/emulated/): its memory reads as device memory and comes from a
// pool like the GPU's; its streams run in FIFO order on a thread of their own, events order
// one stream after another, failures surface at the next wait; the program's stream is the
// calling thread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "memory/emulated/emulated_device.hpp"
#include "memory/pool.hpp"
#include "pool_test_util.hpp"
#include "runtime/gpu/memory_kind.hpp"

using namespace zrt;
using pooltest::fails_with;

namespace {

std::unique_ptr<Pool> device_pool(Device &d, size_t limit = size_t{64} << 20) {
  PoolOptions o;
  o.name = "device";
  o.limit = limit;
  return std::make_unique<Pool>(d.make_resource(), o);
}

}  // namespace

TEST(EmulatedDevice, ItsMemoryIsDeviceMemoryWhileThePoolLives) {
  auto d = make_emulated_device();
  EXPECT_STREQ(d->kind(), "emulated");
  void *p = nullptr;
  {
    auto pool = device_pool(*d);
    EXPECT_EQ(pool->space(), MemorySpace::Device);
    p = pool->allocate(1 << 20, Lifetime::Long);
    EXPECT_EQ(memory_kind(p), MemoryKind::Device);
    EXPECT_TRUE(d->owns(p));
    std::vector<char> host(16);
    EXPECT_EQ(memory_kind(host.data()), MemoryKind::Host);
    EXPECT_FALSE(d->owns(host.data()));
    pool->free(p);
  }
  // The reservation is gone with the pool: the address is nobody's device memory now.
  EXPECT_EQ(memory_kind(p), MemoryKind::Host);
}

TEST(EmulatedDevice, AStreamRunsItsWorkInOrderOnAnotherThread) {
  auto d = make_emulated_device();
  auto pool = device_pool(*d);
  auto s = d->make_stream();
  EXPECT_EQ(s->native(), nullptr);
  const size_t n = 1 << 16;
  auto *dev = static_cast<char *>(pool->allocate(n, Lifetime::Long));
  std::vector<char> in(n), out(n, 0);
  for (size_t i = 0; i < n; ++i)
    in[i] = static_cast<char>(i * 7);
  std::atomic<bool> release{false};
  std::thread::id worker;
  // The first task holds the stream: nothing after it may run before it ends.
  s->run([&] {
    worker = std::this_thread::get_id();
    while (!release.load())
      std::this_thread::yield();
  });
  s->copy(dev, in.data(), n);
  s->fill(dev, 3, 16);  // after the copy: the first 16 bytes end up 3
  s->copy(out.data(), dev, n);
  Event e = s->record();
  EXPECT_FALSE(e.done());
  release = true;
  e.synchronize();
  EXPECT_TRUE(e.done());
  EXPECT_NE(worker, std::this_thread::get_id());
  for (size_t i = 0; i < 16; ++i)
    EXPECT_EQ(out[i], 3);
  EXPECT_EQ(std::memcmp(out.data() + 16, in.data() + 16, n - 16), 0);
  pool->free(dev);
}

TEST(EmulatedDevice, AStreamWaitsForAnEventOfAnother) {
  auto d = make_emulated_device();
  auto a = d->make_stream(), b = d->make_stream();
  std::vector<int> log;
  std::atomic<bool> release{false};
  a->run([&] {
    while (!release.load())
      std::this_thread::yield();
    log.push_back(1);
  });
  Event after_a = a->record();
  b->wait(after_a);
  b->run([&] { log.push_back(2); });
  Event after_b = b->record();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(after_b.done()) << "b ran past an event of a that had not completed";
  release = true;
  after_b.synchronize();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0], 1);
  EXPECT_EQ(log[1], 2);
  // An empty event is complete, and waiting for it costs nothing.
  Event none;
  EXPECT_TRUE(none.done());
  b->wait(none);
  b->synchronize();
}

TEST(EmulatedDevice, AFailedTaskFailsTheNextWaitWithItsMessage) {
  auto d = make_emulated_device();
  auto s = d->make_stream();
  s->run([] { throw std::runtime_error("kernel fault at 0x42"); });
  EXPECT_TRUE(fails_with([&] { s->synchronize(); }, ZRT_ERR_BACKEND,
                         "emulated device stream: kernel fault at 0x42"));
}

TEST(EmulatedDevice, TheProgramsStreamIsTheCallingThread) {
  auto d = make_emulated_device();
  auto program = d->wrap_stream(nullptr);
  int x = 0;
  program->run([&] { x = 1; });
  EXPECT_EQ(x, 1);  // ran before run() returned
  EXPECT_TRUE(program->record().done());
  // Waiting for another stream's event blocks the caller until it completes.
  auto s = d->make_stream();
  std::atomic<int> y{0};
  s->run([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    y = 1;
  });
  program->wait(s->record());
  EXPECT_EQ(y.load(), 1);
  int fake = 0;
  EXPECT_TRUE(fails_with([&] { d->wrap_stream(&fake); }, ZRT_ERR_INVALID_ARGUMENT,
                         "but the device is emulated"));
}
