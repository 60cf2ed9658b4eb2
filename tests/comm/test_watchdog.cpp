// The watchdog: a rank that skips a collective makes it fail on every rank after the
// timeout, with a message naming the operation, its sequence number, its size and the rank
// that did not arrive; the communicator stays failed, the skipping rank included.
#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "support/mpi_fixture.hpp"

namespace {

zrt_comm_h make_comm(zrt_context_h ctx, const char *backend, double timeout) {
  zrt_comm_params_t p = {};
  p.field_mask = ZRT_COMM_PARAM_FIELD_TIMEOUT;
  p.timeout = timeout;
  if (backend != nullptr) {
    p.field_mask |= ZRT_COMM_PARAM_FIELD_BACKEND;
    p.backend = backend;
  }
  zrt_comm_h comm = nullptr;
  EXPECT_EQ(zrt_comm_create(ctx, MPI_COMM_WORLD, &p, &comm), ZRT_SUCCESS) << test::last_error();
  return comm;
}

// Every rank but the last posts an all-reduce the last one skips; then every rank,
// the skipper too, must see the verdict.
void skip_one(zrt_context_h ctx, const char *backend) {
  const int n = test::size(), me = test::rank(), skipper = n - 1;
  SCOPED_TRACE(fmt::format("backend {}", backend != nullptr ? backend : "auto"));
  zrt_comm_h comm = make_comm(ctx, backend, 1.0);
  ASSERT_NE(comm, nullptr);
  // The buffers of a collective that timed out stay allocated for good: MPI may still
  // complete it (when the late rank posts) and write them.
  static std::deque<std::vector<float>> kept;
  kept.emplace_back(1000, 1.0f);
  std::vector<float> &x = kept.back();
  kept.emplace_back(1000, 0.0f);
  std::vector<float> &y = kept.back();
  std::string message;
  if (me != skipper) {
    EXPECT_EQ(zrt_comm_all_reduce(comm, x.data(), y.data(), x.size(), ZRT_DTYPE_FP32, ZRT_OP_SUM),
              ZRT_ERR_TIMEOUT);
    message = test::last_error();
    MPI_Barrier(MPI_COMM_WORLD);
  } else {
    // Busy elsewhere (in MPI, not in zerort) while the others time out.
    MPI_Barrier(MPI_COMM_WORLD);
    // Its next collective on the communicator fails with the same verdict: either at
    // post, or while it waits for ranks that have given up.
    EXPECT_EQ(zrt_comm_all_reduce(comm, x.data(), y.data(), x.size(), ZRT_DTYPE_FP32, ZRT_OP_SUM),
              ZRT_ERR_TIMEOUT);
    message = test::last_error();
  }
  EXPECT_NE(message.find("all_reduce #0 (1000 x fp32 = 3.91 KiB, sum) did not complete within 1 s"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(fmt::format("rank {} did not arrive", skipper)), std::string::npos)
      << message;
  // The communicator stays failed.
  zrt_request_h req = nullptr;
  EXPECT_EQ(zrt_comm_all_reduce_post(comm, x.data(), y.data(), x.size(), ZRT_DTYPE_FP32, ZRT_OP_SUM,
                                     &req),
            ZRT_ERR_TIMEOUT);
  EXPECT_NE(test::last_error().find("this communicator failed earlier"), std::string::npos)
      << test::last_error();
  EXPECT_EQ(zrt_comm_destroy(comm), ZRT_SUCCESS) << test::last_error();
}

}  // namespace

TEST(Watchdog, SkippedCollectiveFailsEveryRankNamingTheRankThatDidNotArrive) {
  if (test::size() < 2) GTEST_SKIP() << "needs two ranks";
  skip_one(test::context(), nullptr);
  skip_one(test::context(), "mpi");
}

// Without the argument check the collective reaches the backend, which then waits for the
// missing rank inside its own protocol: the watchdog abandons the operation there.
TEST(Watchdog, SkippedCollectiveStuckInsideTheBackend) {
  if (test::size() < 2) GTEST_SKIP() << "needs two ranks";
  setenv("ZRT_COMM_CHECK_ARGS", "0", 1);
  zrt_context_h ctx = nullptr;
  zrt_status_t st = zrt_init(MPI_COMM_WORLD, nullptr, &ctx);
  unsetenv("ZRT_COMM_CHECK_ARGS");
  ASSERT_EQ(st, ZRT_SUCCESS) << test::last_error();
  skip_one(ctx, nullptr);
  skip_one(ctx, "mpi");
  EXPECT_EQ(zrt_finalize(ctx), ZRT_SUCCESS) << test::last_error();
}

TEST(Watchdog, HealthyCollectivesAreUntouched) {
  zrt_comm_params_t p = {};
  p.field_mask = ZRT_COMM_PARAM_FIELD_TIMEOUT;
  p.timeout = 0.5;
  zrt_comm_h comm = nullptr;
  ASSERT_EQ(zrt_comm_create(test::context(), MPI_COMM_WORLD, &p, &comm), ZRT_SUCCESS);
  std::vector<double> x(4096, 1.0), y(4096);
  for (int i = 0; i < 50; ++i)
    ASSERT_EQ(zrt_comm_all_reduce(comm, x.data(), y.data(), x.size(), ZRT_DTYPE_FP64, ZRT_OP_SUM),
              ZRT_SUCCESS)
        << test::last_error();
  EXPECT_EQ(y[4095], static_cast<double>(test::size()));
  EXPECT_EQ(zrt_comm_destroy(comm), ZRT_SUCCESS);
}

TEST(Watchdog, BadTimeoutIsRefused) {
  zrt_comm_params_t p = {};
  p.field_mask = ZRT_COMM_PARAM_FIELD_TIMEOUT;
  p.timeout = -1;
  zrt_comm_h comm = nullptr;
  EXPECT_EQ(zrt_comm_create(test::context(), MPI_COMM_WORLD, &p, &comm), ZRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(test::last_error().find("params->timeout is -1"), std::string::npos)
      << test::last_error();

  setenv("ZRT_COMM_TIMEOUT", "-3", 1);
  zrt_context_h ctx = nullptr;
  zrt_status_t st = zrt_init(MPI_COMM_WORLD, nullptr, &ctx);
  unsetenv("ZRT_COMM_TIMEOUT");
  EXPECT_EQ(st, ZRT_ERR_CONFIG);
  EXPECT_NE(test::last_error().find("comm.timeout"), std::string::npos) << test::last_error();
  if (st == ZRT_SUCCESS) zrt_finalize(ctx);
}
