// The communicator's own behaviour on the context's communicator, whatever backend the
// registry chose for it: zero counts, request order, progress before every rank posted,
// sub-communicators. The collectives themselves, per backend, are in test_backends.cpp.
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "support/mpi_fixture.hpp"
#include "support/reference.hpp"

TEST(Collectives, ZeroCountIsANoOp) {
  float x = 1.0f;
  EXPECT_EQ(zrt_comm_all_reduce(test::world(), &x, &x, 0, ZRT_DTYPE_FP32, ZRT_OP_SUM), ZRT_SUCCESS);
  EXPECT_EQ(zrt_comm_reduce_scatter(test::world(), nullptr, nullptr, 0, ZRT_DTYPE_FP32, ZRT_OP_SUM),
            ZRT_SUCCESS)
      << test::last_error();
  EXPECT_EQ(zrt_comm_all_gather(test::world(), nullptr, nullptr, 0, ZRT_DTYPE_BF16), ZRT_SUCCESS);
  EXPECT_EQ(x, 1.0f);
}

TEST(Collectives, NonBlockingRequestsTestedInAnyOrder) {
  int n = test::size(), me = test::rank();
  const int k = 6;
  size_t count = 10007;
  std::vector<std::vector<float>> send(k, std::vector<float>(count)),
      recv(k, std::vector<float>(count));
  std::vector<zrt_request_h> req(k);
  for (int j = 0; j < k; ++j) {
    for (size_t i = 0; i < count; ++i)
      send[j][i] = static_cast<float>((me + j) % 5);
    ASSERT_EQ(zrt_comm_all_reduce_post(test::world(), send[j].data(), recv[j].data(), count,
                                       ZRT_DTYPE_FP32, ZRT_OP_SUM, &req[j]),
              ZRT_SUCCESS)
        << test::last_error();
  }
  // Even ranks drive the last request first: zerort must still start them in order.
  for (int step = 0; step < k; ++step) {
    int j = me % 2 == 0 ? k - 1 - step : step;
    ASSERT_EQ(zrt_request_wait(req[j]), ZRT_SUCCESS) << test::last_error();
    EXPECT_EQ(zrt_request_test(req[j]), ZRT_SUCCESS);  // done stays done
  }
  for (int j = 0; j < k; ++j) {
    float want = 0;
    for (int r = 0; r < n; ++r)
      want += static_cast<float>((r + j) % 5);
    EXPECT_EQ(recv[j][count - 1], want);
    EXPECT_EQ(zrt_request_free(req[j]), ZRT_SUCCESS);
  }
}

TEST(Collectives, TestIsInProgressUntilEveryRankHasPosted) {
  int n = test::size();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  double x = 1.0, y = 0.0;
  zrt_request_h req = nullptr;
  if (test::rank() == 0) {
    ASSERT_EQ(zrt_comm_all_reduce_post(test::world(), &x, &y, 1, ZRT_DTYPE_FP64, ZRT_OP_SUM, &req),
              ZRT_SUCCESS);
    for (int i = 0; i < 100; ++i)
      EXPECT_EQ(zrt_request_test(req), ZRT_IN_PROGRESS);
    EXPECT_EQ(zrt_request_free(req), ZRT_ERR_INVALID_STATE);
    EXPECT_NE(test::last_error().find("still in progress"), std::string::npos)
        << test::last_error();
    MPI_Barrier(MPI_COMM_WORLD);
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
    ASSERT_EQ(zrt_comm_all_reduce_post(test::world(), &x, &y, 1, ZRT_DTYPE_FP64, ZRT_OP_SUM, &req),
              ZRT_SUCCESS);
  }
  ASSERT_EQ(zrt_request_wait(req), ZRT_SUCCESS);
  EXPECT_EQ(y, static_cast<double>(n));
  EXPECT_EQ(zrt_request_free(req), ZRT_SUCCESS);
}

TEST(Collectives, SubCommunicators) {
  int me = test::rank();
  const test::SplitComm half(me % 2, me);
  zrt_comm_h comm = nullptr;
  ASSERT_EQ(zrt_comm_create(test::context(), half, nullptr, &comm), ZRT_SUCCESS)
      << test::last_error();
  int sub_size = 0, sub_rank = -1;
  zrt_comm_size(comm, &sub_size);
  zrt_comm_rank(comm, &sub_rank);
  EXPECT_EQ(sub_rank, me / 2);
  int expected_members = 0;
  for (int r = 0; r < test::size(); ++r)
    expected_members += (r % 2 == me % 2);
  EXPECT_EQ(sub_size, expected_members);
  double v = me, sum = 0;
  ASSERT_EQ(zrt_comm_all_reduce(comm, &v, &sum, 1, ZRT_DTYPE_FP64, ZRT_OP_SUM), ZRT_SUCCESS);
  double want = 0;
  for (int r = 0; r < test::size(); ++r)
    if (r % 2 == me % 2) want += r;
  EXPECT_EQ(sum, want);
  const char *backend = nullptr;
  EXPECT_EQ(zrt_comm_backend(comm, &backend), ZRT_SUCCESS);
  EXPECT_NE(backend, nullptr);
  EXPECT_EQ(zrt_comm_destroy(comm), ZRT_SUCCESS);
  EXPECT_EQ(zrt_comm_rank(comm, &sub_rank), ZRT_ERR_INVALID_HANDLE);  // stale now
}
