// The nccl backend on device buffers: every collective, dtype and op against the serial
// reference, deterministic mode bitwise equal to the host backends, and the refusals.
// Built when NCCL is; every test skips when this node has no usable GPU (as in CI).
#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

#include "support/mpi_fixture.hpp"
#include "support/reference.hpp"

using namespace test;

namespace {

bool have_gpu() {
  int count = 0;
  bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();
  return test::all_ranks(ok);
}

// A device buffer that frees itself.
struct DeviceBuffer {
  explicit DeviceBuffer(size_t bytes) { EXPECT_EQ(cudaMalloc(&ptr, bytes + 16), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  char *data() { return static_cast<char *>(ptr); }
  void *ptr = nullptr;
};

zrt_comm_h nccl_comm(bool deterministic) {
  zrt_comm_params_t p = {};
  p.field_mask = ZRT_COMM_PARAM_FIELD_BACKEND | ZRT_COMM_PARAM_FIELD_DETERMINISTIC;
  p.backend = "nccl";
  p.deterministic = deterministic ? 1 : 0;
  zrt_comm_h c = nullptr;
  EXPECT_EQ(zrt_comm_create(test::context(), MPI_COMM_WORLD, &p, &c), ZRT_SUCCESS) << last_error();
  return c;
}

std::vector<char> to_host(DeviceBuffer &d, size_t bytes) {
  std::vector<char> h(bytes);
  EXPECT_EQ(cudaMemcpy(h.data(), d.data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

}  // namespace

TEST(Nccl, CollectivesOnDeviceBuffersMatchTheReference) {
  if (!have_gpu()) ZRT_NO_DEVICE("no usable CUDA device");
  int n = size(), me = rank(), salt = 12000;
  zrt_comm_h comm = nccl_comm(false);
  ASSERT_NE(comm, nullptr);
  for (zrt_dtype_t dt : kDtypes)
    for (zrt_op_t op : {ZRT_OP_SUM, ZRT_OP_AVG})
      for (size_t count : counts(n)) {
        ++salt;
        SCOPED_TRACE(
            fmt::format("{} {} count {}", name(dt), op == ZRT_OP_SUM ? "sum" : "avg", count));
        const size_t es = esize(dt);
        size_t offset = 0, length = 0, shard = 0;
        zrt_shard_range(count, n, me, &offset, &length, &shard);
        std::vector<char> host(count * es);
        for (size_t i = 0; i < count; ++i)
          put(host.data(), i, dt, input(me, i, salt, dt));
        DeviceBuffer send(count * es), recv(count * es), part(shard * es);
        ASSERT_EQ(cudaMemcpy(send.data(), host.data(), host.size(), cudaMemcpyHostToDevice),
                  cudaSuccess);
        ASSERT_EQ(zrt_comm_all_reduce(comm, send.data(), recv.data(), count, dt, op), ZRT_SUCCESS)
            << last_error();
        std::vector<char> all = to_host(recv, count * es);
        EXPECT_EQ(
            compare(all.data(), count, dt, [&](size_t i) { return reference(i, salt, dt, op, n); }),
            "")
            << "all_reduce";
        ASSERT_EQ(zrt_comm_reduce_scatter(comm, send.data(), part.data(), count, dt, op),
                  ZRT_SUCCESS)
            << last_error();
        std::vector<char> mine = to_host(part, shard * es);
        EXPECT_EQ(compare(mine.data(), length, dt,
                          [&](size_t i) { return reference(offset + i, salt, dt, op, n); }),
                  "")
            << "reduce_scatter";
        for (size_t i = length * es; i < mine.size(); ++i)
          ASSERT_EQ(mine[i], 0) << "padding byte " << i;
        ASSERT_EQ(zrt_comm_all_gather(comm, part.data(), recv.data(), count, dt), ZRT_SUCCESS)
            << last_error();
        std::vector<char> gathered = to_host(recv, count * es);
        EXPECT_EQ(compare(gathered.data(), count, dt,
                          [&](size_t i) { return reference(i, salt, dt, op, n); }),
                  "")
            << "all_gather of the reduce-scatter";
        ASSERT_EQ(zrt_comm_broadcast(comm, send.data(), count, dt, n - 1), ZRT_SUCCESS)
            << last_error();
        std::vector<char> b = to_host(send, count * es);
        EXPECT_EQ(compare(b.data(), count, dt,
                          [&](size_t i) {
                            return Expect{input(n - 1, i, salt, dt), 0.0};
                          }),
                  "")
            << "broadcast";
      }
  EXPECT_EQ(zrt_comm_destroy(comm), ZRT_SUCCESS);
}

TEST(Nccl, DeterministicModeEqualsTheHostBackendsBitForBit) {
  if (!have_gpu()) ZRT_NO_DEVICE("no usable CUDA device");
  int me = rank();
  zrt_comm_h dev = nccl_comm(true);
  zrt_comm_params_t p = {};
  p.field_mask = ZRT_COMM_PARAM_FIELD_BACKEND | ZRT_COMM_PARAM_FIELD_DETERMINISTIC;
  p.backend = "mpi";
  p.deterministic = 1;
  zrt_comm_h host_comm = nullptr;
  ASSERT_EQ(zrt_comm_create(test::context(), MPI_COMM_WORLD, &p, &host_comm), ZRT_SUCCESS);
  for (zrt_dtype_t dt : kDtypes)
    for (size_t count : {size_t{1}, size_t{4099}, (size_t{1} << 20) + 5}) {
      SCOPED_TRACE(fmt::format("{} count {}", name(dt), count));
      const size_t es = esize(dt);
      std::vector<char> in(count * es), want(count * es);
      for (size_t i = 0; i < count; ++i)
        put(in.data(), i, dt, input(me, i, 33, dt) * std::ldexp(1.0, static_cast<int>(i % 11) - 5));
      ASSERT_EQ(zrt_comm_all_reduce(host_comm, in.data(), want.data(), count, dt, ZRT_OP_AVG),
                ZRT_SUCCESS);
      DeviceBuffer send(count * es), recv(count * es);
      ASSERT_EQ(cudaMemcpy(send.data(), in.data(), in.size(), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(zrt_comm_all_reduce(dev, send.data(), recv.data(), count, dt, ZRT_OP_AVG),
                ZRT_SUCCESS)
          << last_error();
      std::vector<char> got = to_host(recv, count * es);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0);
    }
  EXPECT_EQ(zrt_comm_destroy(dev), ZRT_SUCCESS);
  EXPECT_EQ(zrt_comm_destroy(host_comm), ZRT_SUCCESS);
}

TEST(Nccl, HostBackendsRefuseDeviceBuffersAndAutoSendsThemToNccl) {
  if (!have_gpu()) ZRT_NO_DEVICE("no usable CUDA device");
  DeviceBuffer a(64), b(64);
  zrt_comm_params_t p = {};
  p.field_mask = ZRT_COMM_PARAM_FIELD_BACKEND;
  p.backend = "mpi";
  zrt_comm_h comm = nullptr;
  ASSERT_EQ(zrt_comm_create(test::context(), MPI_COMM_WORLD, &p, &comm), ZRT_SUCCESS);
  EXPECT_EQ(zrt_comm_all_reduce(comm, a.data(), b.data(), 16, ZRT_DTYPE_FP32, ZRT_OP_SUM),
            ZRT_ERR_NOT_SUPPORTED);
  EXPECT_NE(last_error().find("backend mpi does not serve device memory"), std::string::npos)
      << last_error();
  EXPECT_EQ(zrt_comm_destroy(comm), ZRT_SUCCESS);
  // The context's own communicator chooses by memory: nccl for device buffers.
  ASSERT_EQ(cudaMemset(a.data(), 0, 64), cudaSuccess);
  EXPECT_EQ(zrt_comm_all_reduce(test::world(), a.data(), b.data(), 16, ZRT_DTYPE_FP32, ZRT_OP_SUM),
            ZRT_SUCCESS)
      << last_error();
}
