// Context queries, placement, several contexts at once, and faked nodes.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/mpi_fixture.hpp"

TEST(Context, QueryMatchesMpi) {
  zrt_context_attr_t a = {};
  a.field_mask = ZRT_CONTEXT_ATTR_FIELD_RANK | ZRT_CONTEXT_ATTR_FIELD_SIZE |
                 ZRT_CONTEXT_ATTR_FIELD_NODE | ZRT_CONTEXT_ATTR_FIELD_LOCAL |
                 ZRT_CONTEXT_ATTR_FIELD_BINDING | ZRT_CONTEXT_ATTR_FIELD_DEVICES;
  ASSERT_EQ(zrt_context_query(test::context(), &a), ZRT_SUCCESS);
  EXPECT_EQ(a.rank, test::rank());
  EXPECT_EQ(a.size, test::size());
  EXPECT_EQ(a.node_count, 1);  // one machine
  EXPECT_EQ(a.node_id, 0);
  EXPECT_EQ(a.local_rank, test::rank());
  EXPECT_EQ(a.local_size, test::size());
  EXPECT_GE(a.bound_pus, 1);
  EXPECT_GE(a.gpu_count, 0);
  EXPECT_TRUE(a.gpu_count > 0 || a.gpu == -1);
}

TEST(Context, OnlyRequestedFieldsAreWritten) {
  zrt_context_attr_t a = {};
  a.field_mask = ZRT_CONTEXT_ATTR_FIELD_SIZE;
  a.rank = -77;
  ASSERT_EQ(zrt_context_query(test::context(), &a), ZRT_SUCCESS);
  EXPECT_EQ(a.rank, -77);
  EXPECT_EQ(a.size, test::size());
}

TEST(Context, DescribeIsJsonWithTopologyConfigAndBackends) {
  size_t n = 0;
  ASSERT_EQ(zrt_context_describe(test::context(), nullptr, 0, &n), ZRT_SUCCESS);
  std::string s(n + 1, '\0');
  size_t again = 0;
  ASSERT_EQ(zrt_context_describe(test::context(), s.data(), s.size(), &again), ZRT_SUCCESS);
  EXPECT_EQ(again, n);
  s.resize(n);
  nlohmann::json j = nlohmann::json::parse(s);
  EXPECT_EQ(j["rank"], test::rank());
  EXPECT_GT(j["topology"]["cores"].get<int>(), 0);
  // The registry's rule for host memory: shm on one node, hier across nodes of several
  // ranks, else ucx (or mpi when ucx cannot start); a backend named in the environment
  // serves everything.
  const auto &t = j["topology"];
  int local = t["local_size"].get<int>(), smallest = local, largest = local;
  MPI_Allreduce(&local, &smallest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&local, &largest, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  std::string want = t["node_count"] == 1                  ? "shm"
                     : smallest == largest && smallest > 1 ? "hier"
                                                           : "ucx";
  if (const char *env = std::getenv("ZRT_COMM_BACKEND");
      env != nullptr && std::string(env) != "auto")
    want = env;
  EXPECT_EQ(j["comm"]["world_backend"], want) << j["comm"].dump();
  EXPECT_TRUE(j["config"].contains("log_level"));
  EXPECT_FALSE(j["mpi"]["initialized_by_zerort"].get<bool>());
}

TEST(Context, SeveralContextsCoexist) {
  zrt_context_h a = nullptr, b = nullptr;
  ASSERT_EQ(zrt_init(MPI_COMM_WORLD, nullptr, &a), ZRT_SUCCESS) << test::last_error();
  ASSERT_EQ(zrt_init(MPI_COMM_WORLD, nullptr, &b), ZRT_SUCCESS) << test::last_error();
  zrt_comm_h ca = nullptr, cb = nullptr;
  zrt_context_comm(a, &ca);
  zrt_context_comm(b, &cb);
  EXPECT_NE(ca, cb);
  // Interleaved collectives on two contexts never match each other's messages.
  double x = 1, ya = 0, yb = 0;
  zrt_request_h ra = nullptr, rb = nullptr;
  ASSERT_EQ(zrt_comm_all_reduce_post(ca, &x, &ya, 1, ZRT_DTYPE_FP64, ZRT_OP_SUM, &ra), ZRT_SUCCESS);
  ASSERT_EQ(zrt_comm_all_reduce_post(cb, &x, &yb, 1, ZRT_DTYPE_FP64, ZRT_OP_AVG, &rb), ZRT_SUCCESS);
  ASSERT_EQ(zrt_request_wait(rb), ZRT_SUCCESS);
  ASSERT_EQ(zrt_request_wait(ra), ZRT_SUCCESS);
  EXPECT_EQ(ya, static_cast<double>(test::size()));
  EXPECT_EQ(yb, 1.0);
  zrt_request_free(ra);
  zrt_request_free(rb);
  EXPECT_EQ(zrt_finalize(a), ZRT_SUCCESS);
  EXPECT_EQ(zrt_comm_all_reduce(cb, &x, &yb, 1, ZRT_DTYPE_FP64, ZRT_OP_SUM), ZRT_SUCCESS);
  EXPECT_EQ(zrt_finalize(b), ZRT_SUCCESS);
}

TEST(Context, RanksPerNodeFakesNodes) {
  zrt_init_params_t p = {};
  p.field_mask = ZRT_INIT_PARAM_FIELD_RANKS_PER_NODE;
  p.ranks_per_node = 2;
  zrt_context_h ctx = nullptr;
  ASSERT_EQ(zrt_init(MPI_COMM_WORLD, &p, &ctx), ZRT_SUCCESS) << test::last_error();
  zrt_context_attr_t a = {};
  a.field_mask = ZRT_CONTEXT_ATTR_FIELD_NODE | ZRT_CONTEXT_ATTR_FIELD_LOCAL;
  ASSERT_EQ(zrt_context_query(ctx, &a), ZRT_SUCCESS);
  EXPECT_EQ(a.node_count, (test::size() + 1) / 2);
  EXPECT_EQ(a.node_id, test::rank() / 2);
  EXPECT_EQ(a.local_rank, test::rank() % 2);
  EXPECT_EQ(a.local_size, std::min(2, test::size() - 2 * (test::rank() / 2)));
  EXPECT_EQ(zrt_finalize(ctx), ZRT_SUCCESS);
}

TEST(Context, FinalizeReleasesLiveEnginesCommunicatorsPoolsAndSavesAndTheirHandlesGoStale) {
  zrt_context_h ctx = nullptr;
  ASSERT_EQ(zrt_init(MPI_COMM_WORLD, nullptr, &ctx), ZRT_SUCCESS) << test::last_error();
  zrt_engine_params_t p = {};
  p.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE;
  p.stage = 3;
  zrt_engine_h engine = nullptr;
  ASSERT_EQ(zrt_engine_create(ctx, &p, &engine), ZRT_SUCCESS) << test::last_error();
  int64_t shape = 300;
  zrt_param_h w = nullptr;
  ASSERT_EQ(zrt_param_register(engine, "w", ZRT_DTYPE_FP32, 1, &shape, &w), ZRT_SUCCESS);
  ASSERT_EQ(zrt_engine_commit(engine), ZRT_SUCCESS) << test::last_error();
  zrt_comm_h comm = nullptr;
  ASSERT_EQ(zrt_comm_create(ctx, MPI_COMM_WORLD, nullptr, &comm), ZRT_SUCCESS);
  zrt_pool_h pool = nullptr;
  ASSERT_EQ(zrt_pool_create(ctx, nullptr, &pool), ZRT_SUCCESS) << test::last_error();
  void *block = nullptr;
  ASSERT_EQ(zrt_pool_alloc(pool, 4096, ZRT_LIFETIME_LONG, &block), ZRT_SUCCESS);
  // A save still writing when the context goes: finalize publishes it.
  const std::string path =
      fmt::format("/tmp/zrt-finalize-live-{}.h5", test::rank() == 0 ? getpid() : 0);
  std::string shared = path;
  shared.resize(256);
  MPI_Bcast(shared.data(), 256, MPI_CHAR, 0, MPI_COMM_WORLD);
  shared.resize(std::strlen(shared.c_str()));
  zrt_request_h save = nullptr;
  ASSERT_EQ(zrt_checkpoint_save_post(engine, shared.c_str(), nullptr, &save), ZRT_SUCCESS)
      << test::last_error();
  // A request in flight on a communicator is refused, naming it; nothing is destroyed.
  double x = 1, y = 0;
  zrt_request_h request = nullptr;
  ASSERT_EQ(zrt_comm_all_reduce_post(comm, &x, &y, 1, ZRT_DTYPE_FP64, ZRT_OP_SUM, &request),
            ZRT_SUCCESS);
  EXPECT_EQ(zrt_finalize(ctx), ZRT_ERR_INVALID_STATE);
  EXPECT_TRUE(test::mentions("1 request(s) on a communicator of"));
  ASSERT_EQ(zrt_request_wait(request), ZRT_SUCCESS);
  ASSERT_EQ(zrt_request_free(request), ZRT_SUCCESS);

  ASSERT_EQ(zrt_finalize(ctx), ZRT_SUCCESS) << test::last_error();
  // Every handle the context made is stale now: errors, never a crash, no C++ names.
  zrt_step_report_t report = {};
  EXPECT_EQ(zrt_engine_step(engine, &report), ZRT_ERR_INVALID_HANDLE);
  EXPECT_TRUE(test::mentions("engine"));
  EXPECT_EQ(test::last_error().find("N3zrt"), std::string::npos) << test::last_error();
  EXPECT_EQ(zrt_param_gather(engine, w), ZRT_ERR_INVALID_HANDLE);
  EXPECT_EQ(zrt_engine_destroy(engine), ZRT_ERR_INVALID_HANDLE);
  int rank = -1;
  EXPECT_EQ(zrt_comm_rank(comm, &rank), ZRT_ERR_INVALID_HANDLE);
  EXPECT_EQ(zrt_comm_all_reduce(comm, &x, &y, 1, ZRT_DTYPE_FP64, ZRT_OP_SUM),
            ZRT_ERR_INVALID_HANDLE);
  void *more = nullptr;
  EXPECT_EQ(zrt_pool_alloc(pool, 64, ZRT_LIFETIME_LONG, &more), ZRT_ERR_INVALID_HANDLE);
  EXPECT_EQ(zrt_pool_free(pool, block), ZRT_ERR_INVALID_HANDLE);
  EXPECT_EQ(zrt_finalize(ctx), ZRT_ERR_INVALID_HANDLE);
  // The save was published before the engine went; its request reports it.
  EXPECT_EQ(zrt_request_wait(save), ZRT_SUCCESS) << test::last_error();
  EXPECT_EQ(zrt_request_free(save), ZRT_SUCCESS);
  size_t length = 0;
  EXPECT_EQ(zrt_checkpoint_describe(shared.c_str(), nullptr, 0, &length), ZRT_SUCCESS)
      << test::last_error();
  MPI_Barrier(MPI_COMM_WORLD);
  if (test::rank() == 0) std::remove(shared.c_str());
}
