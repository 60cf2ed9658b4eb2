// Bad input through the C API: a clear status and message, never a crash or a hang.
#include <vector>

#include "support/mpi_fixture.hpp"

namespace {
using test::mentions;
}  // namespace

TEST(ApiErrors, NullHandlesAndPointers) {
  int r = 0;
  EXPECT_EQ(zrt_comm_rank(nullptr, &r), ZRT_ERR_INVALID_HANDLE);
  mentions("zrt_comm_rank: comm is a NULL communicator handle");
  EXPECT_EQ(zrt_comm_rank(test::world(), nullptr), ZRT_ERR_INVALID_ARGUMENT);
  mentions("rank_p is NULL");
  EXPECT_EQ(zrt_request_wait(nullptr), ZRT_ERR_INVALID_HANDLE);
  EXPECT_EQ(zrt_request_free(nullptr), ZRT_ERR_INVALID_HANDLE);
  EXPECT_EQ(zrt_context_query(nullptr, nullptr), ZRT_ERR_INVALID_HANDLE);
  EXPECT_EQ(zrt_context_query(test::context(), nullptr), ZRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zrt_finalize(nullptr), ZRT_ERR_INVALID_HANDLE);
  EXPECT_EQ(zrt_init(MPI_COMM_WORLD, nullptr, nullptr), ZRT_ERR_INVALID_ARGUMENT);
  // A pointer that was never a handle.
  EXPECT_EQ(zrt_comm_rank(reinterpret_cast<zrt_comm_h>(&r), &r), ZRT_ERR_INVALID_HANDLE);
}

TEST(ApiErrors, WrongCommunicators) {
  zrt_comm_h comm = nullptr;
  EXPECT_EQ(zrt_comm_create(test::context(), MPI_COMM_NULL, nullptr, &comm),
            ZRT_ERR_INVALID_ARGUMENT);
  mentions("MPI_COMM_NULL");
  EXPECT_EQ(zrt_comm_destroy(test::world()), ZRT_ERR_INVALID_ARGUMENT);
  mentions("zrt_finalize destroys it");
  zrt_comm_params_t params = {};
  params.field_mask = ZRT_COMM_PARAM_FIELD_BACKEND;
  params.backend = "carrier-pigeon";
  EXPECT_EQ(zrt_comm_create(test::context(), MPI_COMM_WORLD, &params, &comm),
            ZRT_ERR_INVALID_ARGUMENT);
  mentions("backend 'carrier-pigeon' is not available");
  mentions("accepted values are auto, mpi");
  zrt_context_h null_ctx = nullptr;
  EXPECT_EQ(zrt_init(MPI_COMM_NULL, nullptr, &null_ctx), ZRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(null_ctx, nullptr);  // outputs are written only on success
}

TEST(ApiErrors, BadEnumsAndBuffers) {
  float a[8] = {0}, b[8] = {0};
  auto bad_dtype = static_cast<zrt_dtype_t>(42);
  EXPECT_EQ(zrt_comm_all_reduce(test::world(), a, b, 8, bad_dtype, ZRT_OP_SUM),
            ZRT_ERR_INVALID_ARGUMENT);
  mentions("accepted values are ZRT_DTYPE_FP32");
  EXPECT_EQ(zrt_comm_all_reduce(test::world(), a, b, 8, ZRT_DTYPE_FP32, static_cast<zrt_op_t>(9)),
            ZRT_ERR_INVALID_ARGUMENT);
  mentions("ZRT_OP_AVG");
  EXPECT_EQ(zrt_comm_broadcast(test::world(), a, 8, ZRT_DTYPE_FP32, test::size()),
            ZRT_ERR_INVALID_ARGUMENT);
  mentions("root is");
  EXPECT_EQ(zrt_comm_all_reduce(test::world(), a, a + 1, 4, ZRT_DTYPE_FP32, ZRT_OP_SUM),
            ZRT_ERR_INVALID_ARGUMENT);
  mentions("overlap");
  char bytes[64] = {0};
  EXPECT_EQ(
      zrt_comm_all_reduce(test::world(), bytes + 1, bytes + 33, 4, ZRT_DTYPE_FP32, ZRT_OP_SUM),
      ZRT_ERR_INVALID_ARGUMENT);
  mentions("aligned");
  size_t size = 0;
  EXPECT_EQ(zrt_dtype_size(bad_dtype, &size), ZRT_ERR_INVALID_ARGUMENT);
  // The communicator still works after all of that.
  float x = 1, y = 0;
  EXPECT_EQ(zrt_comm_all_reduce(test::world(), &x, &y, 1, ZRT_DTYPE_FP32, ZRT_OP_SUM), ZRT_SUCCESS);
  EXPECT_EQ(y, static_cast<float>(test::size()));
}

TEST(ApiErrors, CountsThatDifferAcrossRanksFailOnEveryRank) {
  if (test::size() < 2) GTEST_SKIP() << "needs two ranks";
  std::vector<float> a(64, 1.0f), b(64, 0.0f);
  size_t count = test::rank() == 0 ? 10 : 11;
  zrt_status_t st =
      zrt_comm_all_reduce(test::world(), a.data(), b.data(), count, ZRT_DTYPE_FP32, ZRT_OP_SUM);
  EXPECT_EQ(st, ZRT_ERR_MISMATCH);
  mentions("counts differ across ranks: from 10 to 11");
  mentions("all_reduce #");
  // A different collective on one rank is caught too.
  if (test::rank() == 0)
    st = zrt_comm_broadcast(test::world(), a.data(), 16, ZRT_DTYPE_FP32, 0);
  else
    st = zrt_comm_all_reduce(test::world(), a.data(), b.data(), 16, ZRT_DTYPE_FP32, ZRT_OP_SUM);
  EXPECT_EQ(st, ZRT_ERR_MISMATCH);
  mentions("differs across ranks");
  // And the communicator is still in step afterwards.
  float x = 1, y = 0;
  EXPECT_EQ(zrt_comm_all_reduce(test::world(), &x, &y, 1, ZRT_DTYPE_FP32, ZRT_OP_SUM), ZRT_SUCCESS);
  EXPECT_EQ(y, static_cast<float>(test::size()));
}

TEST(ApiErrors, ArgumentsRejectedOnOneRankFailTheOthersInsteadOfHanging) {
  if (test::size() < 2) GTEST_SKIP() << "needs two ranks";
  std::vector<float> a(16, 1.0f), b(16, 0.0f);
  const float *send = test::rank() == 1 ? nullptr : a.data();
  zrt_status_t st =
      zrt_comm_all_reduce(test::world(), send, b.data(), 16, ZRT_DTYPE_FP32, ZRT_OP_SUM);
  if (test::rank() == 1) {
    EXPECT_EQ(st, ZRT_ERR_INVALID_ARGUMENT);
    mentions("sendbuf is NULL");
  } else {
    EXPECT_EQ(st, ZRT_ERR_REMOTE);
    mentions("another rank rejected its arguments");
  }
  float x = 2, y = 0;
  EXPECT_EQ(zrt_comm_all_reduce(test::world(), &x, &y, 1, ZRT_DTYPE_FP32, ZRT_OP_SUM), ZRT_SUCCESS)
      << test::last_error();
  EXPECT_EQ(y, 2.0f * static_cast<float>(test::size()));
}

TEST(ApiErrors, AgreeStatusTellsEveryRankWhoFailedAndWhy) {
  zrt_status_t local = ZRT_SUCCESS;
  int failed = -2;
  EXPECT_EQ(zrt_comm_agree_status(test::world(), local, &failed), ZRT_SUCCESS);
  EXPECT_EQ(failed, -1);

  int culprit = test::size() - 1;
  if (test::rank() == culprit) {
    // Make a real error so the rank has a message to share.
    EXPECT_EQ(zrt_comm_rank(nullptr, nullptr), ZRT_ERR_INVALID_HANDLE);
    local = ZRT_ERR_INVALID_HANDLE;
  }
  EXPECT_EQ(zrt_comm_agree_status(test::world(), local, &failed), ZRT_ERR_INVALID_HANDLE);
  EXPECT_EQ(failed, culprit);
  mentions("rank " + std::to_string(culprit) + ": zrt_comm_rank: comm is a NULL");
  // IN_PROGRESS is not a failure.
  EXPECT_EQ(zrt_comm_agree_status(test::world(), ZRT_IN_PROGRESS, nullptr), ZRT_SUCCESS);
  EXPECT_EQ(zrt_comm_agree_status(nullptr, ZRT_SUCCESS, nullptr), ZRT_ERR_INVALID_HANDLE);
}

TEST(ApiErrors, FinalizeRefusesWhileRequestsAreUnfreedAndHandlesGoStale) {
  zrt_context_h ctx = nullptr;
  ASSERT_EQ(zrt_init(MPI_COMM_WORLD, nullptr, &ctx), ZRT_SUCCESS) << test::last_error();
  zrt_comm_h comm = nullptr;
  ASSERT_EQ(zrt_context_comm(ctx, &comm), ZRT_SUCCESS);
  double x = 1, y = 0;
  zrt_request_h req = nullptr;
  ASSERT_EQ(zrt_comm_all_reduce_post(comm, &x, &y, 1, ZRT_DTYPE_FP64, ZRT_OP_SUM, &req),
            ZRT_SUCCESS);
  ASSERT_EQ(zrt_request_wait(req), ZRT_SUCCESS);
  EXPECT_EQ(zrt_finalize(ctx), ZRT_ERR_INVALID_STATE);
  mentions("not freed");
  EXPECT_EQ(zrt_request_free(req), ZRT_SUCCESS);
  EXPECT_EQ(zrt_request_free(req), ZRT_ERR_INVALID_HANDLE);  // double free
  mentions("stale");
  EXPECT_EQ(zrt_finalize(ctx), ZRT_SUCCESS) << test::last_error();
  // Everything of the finalized context is stale.
  int r = 0;
  EXPECT_EQ(zrt_comm_rank(comm, &r), ZRT_ERR_INVALID_HANDLE);
  EXPECT_EQ(zrt_finalize(ctx), ZRT_ERR_INVALID_HANDLE);
  mentions("stale context handle");
  EXPECT_EQ(zrt_comm_all_reduce(comm, &x, &y, 1, ZRT_DTYPE_FP64, ZRT_OP_SUM),
            ZRT_ERR_INVALID_HANDLE);
}

TEST(ApiErrors, VersionMismatchIsRefused) {
  zrt_context_h ctx = nullptr;
  EXPECT_EQ(zrt_init_versioned((ZRT_API_VERSION_MAJOR + 1) << 16, MPI_COMM_WORLD, nullptr, &ctx),
            ZRT_ERR_VERSION_MISMATCH);
  mentions("rebuild the program");
  EXPECT_EQ(zrt_init_versioned(ZRT_API_VERSION + 1, MPI_COMM_WORLD, nullptr, &ctx),
            ZRT_ERR_VERSION_MISMATCH);
  EXPECT_EQ(ctx, nullptr);
}

TEST(ApiErrors, UnknownParamsBitsAreRefused) {
  zrt_init_params_t p = {};
  p.field_mask = uint64_t{1} << 40;
  zrt_context_h ctx = nullptr;
  EXPECT_EQ(zrt_init(MPI_COMM_WORLD, &p, &ctx), ZRT_ERR_INVALID_ARGUMENT);
  mentions("unknown bits");
  p.field_mask = ZRT_INIT_PARAM_FIELD_LOG_LEVEL;
  p.log_level = static_cast<zrt_log_level_t>(17);
  EXPECT_EQ(zrt_init(MPI_COMM_WORLD, &p, &ctx), ZRT_ERR_INVALID_ARGUMENT);
  mentions("params->log_level");
}
