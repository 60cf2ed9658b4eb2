// main() for the GPT-2 tests that train through zerort's engine: MPI, then Kokkos, then one
// zerort context over MPI_COMM_WORLD for the whole program (tests::world()). Rank 0 prints
// GoogleTest's report; other ranks print only their failures.
#include <gtest/gtest.h>
#include <mpi.h>
#include <zerort/zerort.h>

#include <Kokkos_Core.hpp>

#include <cstdio>

#include "world.hpp"

namespace gpt2::test {
namespace {
zrt_context_h g_context = nullptr;
World g_world;

class FailurePrinter : public ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult &r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", g_world.rank,
                   r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }
};
}  // namespace

zrt_context_h context() {
  return g_context;
}
const World &world() {
  return g_world;
}

}  // namespace gpt2::test

int main(int argc, char **argv) {
  using namespace gpt2::test;
  ::testing::InitGoogleTest(&argc, argv);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rc = 1;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    if (zrt_init(MPI_COMM_WORLD, nullptr, &g_context) == ZRT_SUCCESS) {
      g_world.context = g_context;
      zrt_context_comm(g_context, &g_world.comm);
      zrt_comm_rank(g_world.comm, &g_world.rank);
      zrt_comm_size(g_world.comm, &g_world.size);
      if (g_world.rank != 0) {
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
