// comm.progress_thread: a bound thread steps collectives while the program does not call
// into zerort, so a posted collective completes on its own.
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/mpi_fixture.hpp"

namespace {

// Waits (not in zerort) until the last element reads `want`, for at most a minute: the
// bound only keeps a broken thread from hanging the suite.
bool arrives(std::vector<float> &buf, float want) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  std::atomic_ref<float> last(buf.back());
  while (last.load(std::memory_order_acquire) != want) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    sched_yield();
  }
  return true;
}

}  // namespace

TEST(ProgressThread, CompletesCollectivesWhileTheProgramComputes) {
  setenv("ZRT_COMM_PROGRESS_THREAD", "1", 1);
  zrt_context_h ctx = nullptr;
  zrt_status_t st = zrt_init(MPI_COMM_WORLD, nullptr, &ctx);
  unsetenv("ZRT_COMM_PROGRESS_THREAD");
  ASSERT_EQ(st, ZRT_SUCCESS) << test::last_error();
  size_t n = 0;
  zrt_context_describe(ctx, nullptr, 0, &n);
  std::string text(n + 1, '\0');
  zrt_context_describe(ctx, text.data(), text.size(), &n);
  text.resize(n);
  auto j = nlohmann::json::parse(text);
  ASSERT_FALSE(j["comm"]["thread"].is_null()) << j["comm"].dump();
  EXPECT_EQ(j["comm"]["thread"]["mode"], "drive");

  for (const char *backend : {"shm", "mpi"}) {
    SCOPED_TRACE(backend);
    zrt_comm_params_t p = {};
    p.field_mask = ZRT_COMM_PARAM_FIELD_BACKEND;
    p.backend = backend;
    zrt_comm_h comm = nullptr;
    if (zrt_comm_create(ctx, MPI_COMM_WORLD, &p, &comm) != ZRT_SUCCESS) {
      ADD_FAILURE() << test::last_error();  // shm on faked nodes: not run there
      continue;
    }
    std::vector<float> x(300001, 1.0f), y(300001, 0.0f);
    zrt_request_h req = nullptr;
    ASSERT_EQ(zrt_comm_all_reduce_post(comm, x.data(), y.data(), x.size(), ZRT_DTYPE_FP32,
                                       ZRT_OP_SUM, &req),
              ZRT_SUCCESS)
        << test::last_error();
    EXPECT_TRUE(arrives(y, static_cast<float>(test::size())))
        << "the result did not arrive without test/wait";
    EXPECT_EQ(zrt_request_wait(req), ZRT_SUCCESS) << test::last_error();
    EXPECT_EQ(zrt_request_free(req), ZRT_SUCCESS);
    EXPECT_EQ(zrt_comm_destroy(comm), ZRT_SUCCESS);
  }
  EXPECT_EQ(zrt_finalize(ctx), ZRT_SUCCESS) << test::last_error();
}
