// The backend registry's choices and refusals: a backend asked for on a communicator or
// memory it cannot serve fails with an error that says why; ucx that cannot start falls
// back to mpi. ctest runs this binary on faked nodes too (even and uneven ones).
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/mpi_fixture.hpp"

namespace {

nlohmann::json describe() {
  size_t n = 0;
  zrt_context_describe(test::context(), nullptr, 0, &n);
  std::string s(n + 1, '\0');
  zrt_context_describe(test::context(), s.data(), s.size(), &n);
  s.resize(n);
  return nlohmann::json::parse(s);
}

bool built(const std::string &backend) {
  const nlohmann::json j = describe();  // a temporary would die before the loop
  for (const auto &b : j["comm"]["backends"])
    if (b == backend) return true;
  return false;
}

// Every rank's node size, to tell even nodes from uneven ones.
std::vector<int> node_sizes() {
  int mine = describe()["topology"]["local_size"].get<int>();
  std::vector<int> all(static_cast<size_t>(test::size()));
  MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
  return all;
}

zrt_status_t create(const char *backend, zrt_comm_h *comm) {
  zrt_comm_params_t p = {};
  p.field_mask = ZRT_COMM_PARAM_FIELD_BACKEND;
  p.backend = backend;
  return zrt_comm_create(test::context(), MPI_COMM_WORLD, &p, comm);
}

bool mentions(const std::string &text) {
  return test::last_error().find(text) != std::string::npos;
}

}  // namespace

TEST(Registry, ShmRefusesACommunicatorThatSpansNodes) {
  if (describe()["topology"]["node_count"] == 1) GTEST_SKIP() << "one node";
  zrt_comm_h comm = nullptr;
  EXPECT_EQ(create("shm", &comm), ZRT_ERR_NOT_SUPPORTED);
  EXPECT_TRUE(mentions("backend shm serves the ranks of one node; this communicator spans"))
      << test::last_error();
}

TEST(Registry, HierRefusesNodesOfDifferentSizes) {
  std::vector<int> sizes = node_sizes();
  bool even = std::all_of(sizes.begin(), sizes.end(), [&](int s) { return s == sizes[0]; });
  zrt_comm_h comm = nullptr;
  if (even) {
    ASSERT_EQ(create("hier", &comm), ZRT_SUCCESS) << test::last_error();
    EXPECT_EQ(zrt_comm_destroy(comm), ZRT_SUCCESS);
    return;
  }
  EXPECT_EQ(create("hier", &comm), ZRT_ERR_NOT_SUPPORTED);
  EXPECT_TRUE(mentions("backend hier needs the same number of ranks on every node"))
      << test::last_error();
  // auto then takes the flat path across the uneven nodes.
  EXPECT_NE(describe()["comm"]["world_backend"], "hier");
}

TEST(Registry, UnavailableUcxTransportFallsBackToMpi) {
  if (!built("ucx")) GTEST_SKIP() << "no ucx in this build";
  setenv("UCX_TLS", "no-such-transport", 1);
  zrt_comm_h comm = nullptr;
  zrt_status_t st = create("ucx", &comm);
  unsetenv("UCX_TLS");
  ASSERT_EQ(st, ZRT_SUCCESS) << test::last_error();
  const char *name = nullptr;
  EXPECT_EQ(zrt_comm_backend(comm, &name), ZRT_SUCCESS);
  EXPECT_STREQ(name, "mpi");
  double x = 1, y = 0;
  EXPECT_EQ(zrt_comm_all_reduce(comm, &x, &y, 1, ZRT_DTYPE_FP64, ZRT_OP_SUM), ZRT_SUCCESS);
  EXPECT_EQ(y, test::size());
  EXPECT_EQ(zrt_comm_destroy(comm), ZRT_SUCCESS);
}

TEST(Registry, NcclServesDeviceMemoryOnly) {
  if (!built("nccl")) GTEST_SKIP() << "no nccl in this build";
  zrt_comm_h comm = nullptr;
  zrt_status_t st = create("nccl", &comm);
  if (describe()["topology"]["gpus"].empty()) {
    // No GPU: asking for nccl is a clear error on every rank, not a crash.
    EXPECT_EQ(st, ZRT_ERR_NOT_SUPPORTED);
    EXPECT_TRUE(mentions("backend nccl needs a CUDA device on every rank")) << test::last_error();
    return;
  }
  ASSERT_EQ(st, ZRT_SUCCESS) << test::last_error();
  float x = 1, y = 0;
  EXPECT_EQ(zrt_comm_all_reduce(comm, &x, &y, 1, ZRT_DTYPE_FP32, ZRT_OP_SUM),
            ZRT_ERR_NOT_SUPPORTED);
  EXPECT_TRUE(mentions("backend nccl does not serve host memory")) << test::last_error();
  EXPECT_EQ(zrt_comm_destroy(comm), ZRT_SUCCESS);
}

TEST(Registry, AutoOnOneRankIsLocal) {
  zrt_comm_h comm = nullptr;
  ASSERT_EQ(zrt_comm_create(test::context(), MPI_COMM_SELF, nullptr, &comm), ZRT_SUCCESS)
      << test::last_error();
  const char *name = nullptr;
  zrt_comm_backend(comm, &name);
  EXPECT_STREQ(name, "shm");
  float x[3] = {1, 2, 3}, y[3] = {};
  EXPECT_EQ(zrt_comm_all_reduce(comm, x, y, 3, ZRT_DTYPE_FP32, ZRT_OP_AVG), ZRT_SUCCESS);
  EXPECT_EQ(y[2], 3.0f);
  EXPECT_EQ(zrt_comm_destroy(comm), ZRT_SUCCESS);
}
