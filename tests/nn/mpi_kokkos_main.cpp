// main() for the GPT-2 tests that train through zerort's engine: MPI, then Kokkos, then one
// zerort context over MPI_COMM_WORLD for the whole program (tests::world()). Rank 0 prints
// GoogleTest's report; other ranks print only their failures.
#include <gtest/gtest.h>
#include <mpi.h>
#include <zerort/zerort.h>

#include <Kokkos_Core.hpp>

#include <cstdio>

#include "mpi_context.hpp"

namespace apps_test {
namespace {
zrt_context_h g_context = nullptr;
zrt_comm_h g_comm = nullptr;
int g_rank = 0, g_size = 1;

class FailurePrinter : public ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult &r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", g_rank,
                   r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }
};
}  // namespace

zrt_context_h context() {
  return g_context;
}
zrt_comm_h comm() {
  return g_comm;
}
int rank() {
  return g_rank;
}
int size() {
  return g_size;
}

}  // namespace apps_test

int main(int argc, char **argv) {
  using namespace apps_test;
  ::testing::InitGoogleTest(&argc, argv);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rc = 1;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    if (zrt_init(MPI_COMM_WORLD, nullptr, &g_context) == ZRT_SUCCESS) {
      zrt_context_comm(g_context, &g_comm);
      zrt_comm_rank(g_comm, &g_rank);
      zrt_comm_size(g_comm, &g_size);
      if (g_rank != 0) {
        auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
        delete listeners.Release(listeners.default_result_printer());
        listeners.Append(new FailurePrinter);
      }
      rc = RUN_ALL_TESTS();
      if (zrt_finalize(g_context) != ZRT_SUCCESS) rc = 1;
    } else {
      std::fprintf(stderr, "zrt_init: %s\n", zrt_last_error_message());
    }
  }
  MPI_Finalize();
  return rc;
}
