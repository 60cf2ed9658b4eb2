#include "model_bench.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include <zerort/nn/kokkos_device.hpp>

namespace {

// The rounds and the figures of each run, printed by rank 0.
void time_rounds(BenchModel &m, int rounds, bool json, const BenchWorld &world) {
  std::vector<BenchRun> &runs = m.runs;
  // Rounds of one training step of each model and then the baseline, after one untimed
  // round: this VM's speed drifts by up to ±20% over seconds (its neighbours), and a drift
  // then falls on both sides of a round's ratio. The figures are medians over the rounds:
  // of each model's step time, of the baseline's, and of each round's model / gemm.
  for (BenchRun &run : runs)
    run.step();
  m.gemms->run();
  std::vector<std::vector<double>> step_s(runs.size());
  std::vector<double> gemm_s;
  // The models take turns at going first (one order, then the reverse), so none always
  // follows the baseline.
  for (int i = 0; i < rounds; ++i) {
    for (size_t k = 0; k < runs.size(); ++k) {
      const size_t r = i % 2 == 0 ? k : runs.size() - 1 - k;
      step_s[r].push_back(timed_on_all_ranks(runs[r].step));
    }
    gemm_s.push_back(timed_on_all_ranks([&] { m.gemms->run(); }));
  }

  const double gemm_median = median_of(gemm_s);
  // GFLOP/s of the baseline, all ranks at once.
  auto gemm_gflops = [&](double seconds) { return m.gemms->flops() * world.size / seconds / 1e9; };
  const double sgemm_gflops = gemm_gflops(gemm_median);
  if (world.rank == 0 && !json) {
    fmt::print("{}\n", m.title);
    fmt::print(
        "  gemm baseline   {:8.1f} ms  (KokkosBlas::gemm, same shapes, every rank) "
        "{:7.2f} GFLOP/s\n",
        gemm_median * 1e3, sgemm_gflops);
  }
  for (size_t r = 0; r < runs.size(); ++r) {
    BenchRun &run = runs[r];
    const double step_median = median_of(step_s[r]);
    const double model_gflops = m.model_flops / step_median / 1e9;
    std::vector<double> fracs, vs_firsts;
    for (size_t i = 0; i < gemm_s.size(); ++i) {
      fracs.push_back(m.model_flops / step_s[r][i] / 1e9 / gemm_gflops(gemm_s[i]));
      if (r > 0) vs_firsts.push_back(step_s[0][i] / step_s[r][i]);
    }
    const double frac = median_of(fracs);
    const auto [lowest, highest] = std::minmax_element(fracs.begin(), fracs.end());
    const double vs_first = median_of(vs_firsts);
    nlohmann::json extra = nlohmann::json::object();
    std::vector<std::string> lines;
    if (run.report) run.report(extra, lines);
    if (world.rank != 0) continue;
    if (json) {
      nlohmann::json j = m.json;
      j.update(run.json);
      j.update({{"step_s", step_median},
                {"tokens_per_s", m.tokens_per_step / step_median},
                {"model_gflops", model_gflops},
                {"sgemm_gflops", sgemm_gflops},
                {"frac_of_sgemm", frac},
                {"frac_of_sgemm_min", *lowest},
                {"frac_of_sgemm_max", *highest}});
      j.update(extra);
      if (vs_first > 0) j["tokens_per_s_vs_" + runs.front().name] = vs_first;
      std::printf("%s\n", j.dump().c_str());
    } else {
      if (!run.label.empty()) fmt::print("  {}\n", run.label);
      fmt::print("  training step   {:8.1f} ms  {:8.0f} tokens/s  {:7.2f} model GFLOP/s{}\n",
                 step_median * 1e3, m.tokens_per_step / step_median, model_gflops,
                 vs_first > 0
                     ? fmt::format("  ({:.3f}x the tokens/s of {})", vs_first, runs.front().name)
                     : std::string());
      fmt::print("  model / gemm    {:.2f}  (the median of the rounds' ratios; {:.2f}-{:.2f})\n",
                 frac, *lowest, *highest);
      for (const std::string &line : lines)
        fmt::print("  {}\n", line);
    }
  }
}

}  // namespace

int per_rank_batch(int global_batch, int size) {
  if (global_batch % size != 0)
    throw std::invalid_argument(
        fmt::format("--batch {} does not split over {} ranks", global_batch, size));
  return global_batch / size;
}

void run_model_bench(const char *name, int rounds, bool json,
                     const std::function<BenchModel(const BenchWorld &)> &set_up) {
  BenchWorld world;
  MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world.size);
  if (const std::string why = zrt::nn::cuda_unusable(); !why.empty()) {
    std::fprintf(stderr, "zrt-bench %s: rank %d: %s\n", name, world.rank, why.c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (zrt_init(MPI_COMM_WORLD, nullptr, &world.context) != ZRT_SUCCESS) {
    std::fprintf(stderr, "zrt-bench %s: zrt_init: %s\n", name, zrt_last_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int kokkos_argc = 0;
  // On the rank's GPU in a CUDA build; ends after zrt_finalize, at the end of this function.
  const auto kokkos = zrt::nn::start_kokkos(world.context, kokkos_argc, nullptr);
  try {
    BenchModel model = set_up(world);
    time_rounds(model, rounds, json, world);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "zrt-bench %s: rank %d: %s\n", name, world.rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  zrt_finalize(world.context);
}
