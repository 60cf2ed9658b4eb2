// Collectives on device memory through the host (the staged backend), on the emulated
// device: every op, dtype and size gives bitwise the result of the same collective on
// host memory in deterministic mode, and the registry says which backend serves the
// device and why. ctest runs these with ZRT_MEMORY_DEVICE_EMULATE=1 (mpi_emulated_device);
// without a device they skip, saying so.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/device_copy.hpp"
#include "support/mpi_fixture.hpp"

namespace {

nlohmann::json describe(zrt_context_h ctx) {
  size_t n = 0;
  zrt_context_describe(ctx, nullptr, 0, &n);
  std::string text(n + 1, '\0');
  zrt_context_describe(ctx, text.data(), text.size(), &n);
  text.resize(n);
  return nlohmann::json::parse(text);
}

// Deterministic values whose sums differ bit by bit with the summation order in 16-bit
// types, so a different order would show.
void fill(std::vector<float> &v, int rank, int salt) {
  for (size_t i = 0; i < v.size(); ++i)
    v[i] =
        static_cast<float>((static_cast<int>(i * 2654435761u % 1000) - 500) * (rank + 1) + salt) /
        97.0f;
}

struct DevicePool {
  zrt_pool_h pool = nullptr;
  std::vector<void *> held;
  DevicePool() { zrt_context_pool(test::context(), ZRT_MEMORY_DEVICE, &pool); }
  ~DevicePool() {
    for (void *p : held)
      zrt_pool_free(pool, p);
  }
  void *alloc(size_t bytes) {
    void *p = nullptr;
    if (zrt_pool_alloc(pool, bytes, ZRT_LIFETIME_TRANSIENT, &p) != ZRT_SUCCESS) return nullptr;
    held.push_back(p);
    return p;
  }
};

}  // namespace

TEST(DeviceCollectives, TheRegistryNamesTheBackendForDeviceMemoryAndWhy) {
  nlohmann::json d = describe(test::context());
  const nlohmann::json &backend = d["comm"]["world"]["backend"];
  if (!test::device_missing().empty()) {
    EXPECT_TRUE(backend["device"].is_null());
    EXPECT_FALSE(backend.value("device_missing", "").empty());
  }
  ZRT_SKIP_WITHOUT_DEVICE();
  EXPECT_FALSE(backend["device"].is_null()) << backend.dump();
  EXPECT_FALSE(backend.value("device_why", "").empty()) << backend.dump();
  if (d["memory"]["device"].value("kind", "") == "emulated") {
    EXPECT_EQ(backend["device"], "staged");
    EXPECT_NE(backend.value("device_why", "").find("emulated"), std::string::npos)
        << backend.dump();
  }
  if (test::rank() == 0)
    std::printf("  device collectives at np %d: %s (%s)\n", test::size(),
                backend["device"].get<std::string>().c_str(),
                backend.value("device_why", "").c_str());
}

TEST(DeviceCollectives, StagedResultsAreBitwiseTheHostResults) {
  ZRT_SKIP_WITHOUT_DEVICE();
  zrt_comm_params_t p = {};
  p.field_mask = ZRT_COMM_PARAM_FIELD_DETERMINISTIC;
  p.deterministic = 1;
  zrt_comm_h comm = nullptr;
  CHECK_OK(zrt_comm_create(test::context(), MPI_COMM_WORLD, &p, &comm));
  const int n = test::size(), rank = test::rank();
  DevicePool device;
  for (zrt_dtype_t dt : {ZRT_DTYPE_FP32, ZRT_DTYPE_BF16, ZRT_DTYPE_FP16, ZRT_DTYPE_FP64}) {
    size_t es = 0;
    zrt_dtype_size(dt, &es);
    for (size_t count : {size_t{1}, size_t{1001}, size_t{300007}}) {
      SCOPED_TRACE(fmt::format("dtype {} count {}", static_cast<int>(dt), count));
      std::vector<float> values(count);
      fill(values, rank, static_cast<int>(count % 7));
      std::vector<char> in(count * es), host_out(count * es), device_out(count * es);
      CHECK_OK(zrt_dtype_convert(values.data(), ZRT_DTYPE_FP32, in.data(), dt, count));
      size_t offset = 0, length = 0, shard = 0;
      zrt_shard_range(count, n, rank, &offset, &length, &shard);
      char *dsend = static_cast<char *>(device.alloc(count * es));
      char *drecv = static_cast<char *>(device.alloc(count * es));
      ASSERT_NE(dsend, nullptr) << test::last_error();
      ASSERT_NE(drecv, nullptr) << test::last_error();
      struct Case {
        const char *name;
        std::function<zrt_status_t(const void *, void *)> run;
        size_t in_bytes, out_bytes;
        size_t from, at;  // the input is in[from, from + in_bytes), put at buffer + at
      };
      std::vector<Case> cases = {
          {"reduce_scatter",
           [&](const void *s, void *r) {
             return zrt_comm_reduce_scatter(comm, s, r, count, dt, ZRT_OP_AVG);
           },
           count * es, shard * es, 0, 0},
          {"all_reduce",
           [&](const void *s, void *r) {
             return zrt_comm_all_reduce(comm, s, r, count, dt, ZRT_OP_SUM);
           },
           count * es, count * es, 0, 0},
          {"all_gather",
           [&](const void *s, void *r) { return zrt_comm_all_gather(comm, s, r, count, dt); },
           length * es, count * es, offset * es, 0},
          {"all_gather_in_place",
           [&](const void *, void *r) {
             return zrt_comm_all_gather(comm, static_cast<char *>(r) + offset * es, r, count, dt);
           },
           length * es, count * es, offset * es, offset * es},
          {"broadcast",
           [&](const void *, void *r) { return zrt_comm_broadcast(comm, r, count, dt, n - 1); },
           count * es, count * es, 0, 0},
      };
      for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        std::vector<char> hsend(count * es), hrecv(count * es, 0);
        const bool into_recv =
            std::string(c.name) == "broadcast" || std::string(c.name) == "all_gather_in_place";
        // The input, on host memory and on the device.
        std::memcpy((into_recv ? hrecv.data() : hsend.data()) + c.at, in.data() + c.from,
                    c.in_bytes);
        test::device_memset(drecv, 0, count * es);
        test::device_copy((into_recv ? drecv : dsend) + c.at, in.data() + c.from, c.in_bytes);
        EXPECT_EQ(c.run(hsend.data(), hrecv.data()), ZRT_SUCCESS) << test::last_error();
        EXPECT_EQ(c.run(dsend, drecv), ZRT_SUCCESS) << test::last_error();
        // Blocking collectives on the default stream: their results are there.
        std::vector<char> got(c.out_bytes);
        test::device_copy(got.data(), drecv, c.out_bytes);
        EXPECT_EQ(std::memcmp(hrecv.data(), got.data(), c.out_bytes), 0)
            << "the device result differs from the host result";
      }
    }
  }
  EXPECT_EQ(zrt_comm_destroy(comm), ZRT_SUCCESS);
}

TEST(DeviceCollectives, HostAndDeviceBuffersInOneCollectiveAreRefused) {
  ZRT_SKIP_WITHOUT_DEVICE();
  DevicePool device;
  auto *d = static_cast<float *>(device.alloc(64 * sizeof(float)));
  std::vector<float> h(64, 1.0f);
  EXPECT_EQ(zrt_comm_all_reduce(test::world(), h.data(), d, 64, ZRT_DTYPE_FP32, ZRT_OP_SUM),
            ZRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(test::last_error().find("sendbuf is host memory but recvbuf is device memory"),
            std::string::npos)
      << test::last_error();
}
