// main() of the MPI test binary: MPI first, then one zerort context, then the tests.
// Rank 0 prints GoogleTest's usual report; other ranks print only their failures.
#include <cstdio>

#include "mpi_fixture.hpp"

namespace {
zrt_context_h g_context = nullptr;
zrt_comm_h g_world = nullptr;
int g_rank = 0, g_size = 1;

class FailurePrinter : public ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult &r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", g_rank,
                   r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }
};
}  // namespace

namespace test {
zrt_context_h context() {
  return g_context;
}
zrt_comm_h world() {
  return g_world;
}
int rank() {
  return g_rank;
}
int size() {
  return g_size;
}
}  // namespace test

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  ::testing::InitGoogleTest(&argc, argv);
  if (g_rank != 0) {
    auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter);
  }
  if (zrt_init(MPI_COMM_WORLD, nullptr, &g_context) != ZRT_SUCCESS) {
    std::fprintf(stderr, "[rank %d] zrt_init failed: %s\n", g_rank, zrt_last_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  zrt_context_comm(g_context, &g_world);
  int rc = RUN_ALL_TESTS();
  if (zrt_finalize(g_context) != ZRT_SUCCESS) {
    std::fprintf(stderr, "[rank %d] zrt_finalize failed: %s\n", g_rank, zrt_last_error_message());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
