// Data parallelism through zerort at np 2: two ranks with half the batch each train
// exactly as one rank with the whole batch (the loader shards consecutive sequences, the
// gradients are averaged), and every rank ends with the same parameters.
#include <gtest/gtest.h>
#include <mpi.h>
#include <zerort/zerort.h>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

#include "data_cache.hpp"
#include "train/local_model_state.hpp"
#include "train/trainer.hpp"

namespace gpt2::test {
namespace {

World g_world;

TrainOptions run_options(int batch) {
  TrainOptions o;
  o.config = Gpt2Config::preset("d2");
  o.data_dir = data_cache() / "moby-dick";
  o.batch = batch;
  o.seq = 32;
  o.steps = 3;
  o.lr = {3e-3, 3e-4, 1, 3};
  o.eval_every = 0;
  o.eval_batches = 2;
  o.sample_every = -1;
  o.quiet = true;
  return o;
}

// Sum and sum of squares of every parameter: a fingerprint to compare ranks with.
std::vector<double> fingerprint(ModelState &state) {
  std::vector<double> out = {0, 0};
  std::vector<float> values;
  for (size_t id = 0; id < state.store().tensors().size(); ++id) {
    values.resize(static_cast<size_t>(state.store().tensors()[id].numel()));
    state.store().get(static_cast<int>(id), values.data());
    for (float v : values) {
      out[0] += v;
      out[1] += double(v) * v;
    }
  }
  return out;
}

TEST(DataParallel, TwoRanksEqualOneWithTheWholeBatch) {
  if (g_world.size != 2) GTEST_SKIP() << "needs 2 ranks";
  TrainOptions two = run_options(2);
  auto state = make_local_model_state(two.config, two.optimizer, g_world.comm);
  TrainResult parallel = train(two, *state, g_world);
  ASSERT_EQ(parallel.losses.size(), 3u);

  // Every rank holds the same parameters afterwards.
  std::vector<double> mine = fingerprint(*state), theirs(2);
  MPI_Allreduce(mine.data(), theirs.data(), 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(mine, theirs);

  if (g_world.rank == 0) {
    TrainOptions one = run_options(4);
    auto alone = make_local_model_state(one.config, one.optimizer, nullptr);
    TrainResult serial = train(one, *alone, World{});
    for (size_t i = 0; i < serial.losses.size(); ++i)
      EXPECT_NEAR(parallel.losses[i], serial.losses[i], 2e-4) << "step " << i + 1;
    std::printf(
        "  losses at np 2 (2 sequences each): %.5f %.5f %.5f; np 1 (4): %.5f %.5f "
        "%.5f\n",
        parallel.losses[0], parallel.losses[1], parallel.losses[2], serial.losses[0],
        serial.losses[1], serial.losses[2]);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
}  // namespace gpt2::test

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rc = 1;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    zrt_context_h ctx = nullptr;
    if (zrt_init(MPI_COMM_WORLD, nullptr, &ctx) == ZRT_SUCCESS) {
      auto &w = gpt2::test::g_world;
      zrt_context_comm(ctx, &w.comm);
      zrt_comm_rank(w.comm, &w.rank);
      zrt_comm_size(w.comm, &w.size);
      if (w.rank != 0) ::testing::GTEST_FLAG(print_time) = false;
      rc = RUN_ALL_TESTS();
      zrt_finalize(ctx);
    } else {
      std::fprintf(stderr, "zrt_init: %s\n", zrt_last_error_message());
    }
  }
  MPI_Finalize();
  return rc;
}
