// zrt-bench gpt2: tokens/s and model FLOP/s of GPT-2 training steps (zrt-gpt2's model on
// zerort's engine, forward + backward + ZeRO step) against the FLOP/s KokkosBlas::gemm
// reaches on the same matrix shapes on the same ranks, measured in the same run.
//
// Model FLOPs per step are llm.c's (PaLM's) count: 6 x parameters x tokens for the matrix
// products, plus 12 x layers x channels x sequence length x tokens for attention. The
// baseline runs, on every rank at once, the gemms one training step of this rank's share
// makes: for each linear layer its forward product and both backward ones (input and
// weight gradients), for every block and the LM head.
#include "bench_gpt2.hpp"

#include <fmt/format.h>
#include <mpi.h>
#include <zerort/zerort.h>

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "gemm_baseline.hpp"
#include "model/activations.hpp"
#include "model/gpt2_model.hpp"
#include "nn/host_loops.hpp"
#include "timing.hpp"
#include "train/training_types.hpp"
#include "training/cli_checks.hpp"
#include "training/kokkos_device.hpp"

namespace {

struct Gpt2BenchOptions {
  bool json = false;
  std::string config = "gpt2";
  int global_batch = 4;
  int seq = 64;
  int steps = 5;
  int stage = 2;
  std::string buckets = "both";  // the engine's collective buffers: private, shared or both
};

void run_gpt2_bench(const Gpt2BenchOptions &opt) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (const std::string why = training::cuda_unusable(); !why.empty()) {
    std::fprintf(stderr, "zrt-bench gpt2: rank %d: %s\n", rank, why.c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  zrt_context_h ctx = nullptr;
  if (zrt_init(MPI_COMM_WORLD, nullptr, &ctx) != ZRT_SUCCESS) {
    std::fprintf(stderr, "zrt-bench gpt2: zrt_init: %s\n", zrt_last_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int kokkos_argc = 0;
  // On the rank's GPU in a CUDA build; ends after zrt_finalize, at the end of this function.
  const auto kokkos = training::start_kokkos(ctx, kokkos_argc, nullptr);
  try {
    const gpt2::Gpt2Config cfg = gpt2::Gpt2Config::from_name_or_file(opt.config);
    if (opt.global_batch % size != 0)
      throw std::invalid_argument(
          fmt::format("--batch {} does not split over {} ranks", opt.global_batch, size));
    const int B = opt.global_batch / size, T = opt.seq;
    std::vector<int> tokens_host(size_t(B) * T);
    std::mt19937 rng(1234 + unsigned(rank));
    for (int &t : tokens_host)
      t = int(rng() % unsigned(cfg.vocab_size));
    Kokkos::View<int *, gpt2::MemSpace> tokens("tokens", tokens_host.size()),
        targets("targets", tokens_host.size());
    using HostView = Kokkos::View<const int *, Kokkos::HostSpace, gpt2::Unmanaged>;
    Kokkos::deep_copy(tokens, HostView(tokens_host.data(), tokens_host.size()));
    std::rotate(tokens_host.begin(), tokens_host.begin() + 1, tokens_host.end());
    Kokkos::deep_copy(targets, HostView(tokens_host.data(), tokens_host.size()));

    // Where the step goes, on this rank, summed over the calls (the warm-up's included):
    // forward, backward (gradients handed to the engine as they are ready), and the engine's
    // step, of which comm is the time blocked on its collectives (the step report's
    // comm_wait_seconds, which also counts waits inside backward).
    struct Phases {
      double forward = 0, backward = 0, engine = 0, comm = 0, total = 0;
    };
    // One model per kind of buffers (the engine's collective buffers private, or in its
    // node-shared window), each from the same initial parameters and tokens, all alive at
    // once so that their steps can alternate with the baseline's.
    struct Run {
      bool shared = true;
      int64_t shared_bytes = 0;  // what went into the window (0: none)
      std::unique_ptr<training::ModelState> state;
      std::unique_ptr<gpt2::Gpt2Model<float>> model;
      std::unique_ptr<gpt2::Activations<float>> acts;
      std::vector<double> step_s;  // per round
      Phases phases;
    };
    std::vector<Run> runs;
    for (bool shared : {false, true})
      if (opt.buckets == "both" || (opt.buckets == "shared") == shared) {
        Run &run = runs.emplace_back();
        run.shared = shared;
        gpt2::EngineOptions eo;
        eo.stage = opt.stage;
        eo.shared_buffers = shared ? 1 : 0;
        run.state = gpt2::make_engine_model_state(ctx, gpt2::parameter_layout(cfg), eo);
        run.shared_bytes = run.state->memory().node_shared_bytes;
        run.model = std::make_unique<gpt2::Gpt2Model<float>>(cfg, run.state->store());
        run.acts =
            std::make_unique<gpt2::Activations<float>>(cfg, B, T, gpt2::ActivationMode::keep);
        run.model->init_parameters(1337);
      }
    auto train_step = [&](Run &run) {
      Phases &phases = run.phases;
      const double t0 = wall_seconds();
      run.model->forward(*run.acts, tokens, targets, B, T);
      Kokkos::fence();
      const double t1 = wall_seconds();
      run.model->backward(*run.acts, tokens, targets, B, T, 1.0f);
      Kokkos::fence();
      const double t2 = wall_seconds();
      const training::StepReport r = run.state->step(1e-4);
      const double t3 = wall_seconds();
      phases.forward += t1 - t0;
      phases.backward += t2 - t1;
      phases.engine += t3 - t2;
      phases.comm += r.comm.wait_seconds;
      phases.total += t3 - t0;
    };

    const int64_t C = cfg.channels;
    GemmStep gemms({{C, 3 * C, cfg.num_layers},
                    {C, C, cfg.num_layers},
                    {C, 4 * C, cfg.num_layers},
                    {4 * C, C, cfg.num_layers},
                    {C, cfg.vocab_size, 1}},
                   int64_t(B) * T);
    // Rounds of one training step of each model and then the baseline, after one untimed
    // round: this VM's speed drifts by up to ±20% over seconds (its neighbours), and a drift
    // then falls on both sides of a round's ratio. The figures are medians over the rounds:
    // of each model's step time, of the baseline's, and of each round's model / gemm.
    for (Run &run : runs)
      train_step(run);
    gemms.run();
    std::vector<double> gemm_s;
    // The models take turns at going first (private, shared; then shared, private), so
    // neither always follows the baseline.
    for (int i = 0; i < opt.steps; ++i) {
      for (size_t k = 0; k < runs.size(); ++k) {
        Run &run = runs[i % 2 == 0 ? k : runs.size() - 1 - k];
        run.step_s.push_back(timed_on_all_ranks([&] { train_step(run); }));
      }
      gemm_s.push_back(timed_on_all_ranks([&] { gemms.run(); }));
    }

    const double tokens_per_step = double(opt.global_batch) * T;
    const double P = double(cfg.num_parameters());
    const double model_flops =
        (6.0 * P + 12.0 * cfg.num_layers * cfg.channels * T) * tokens_per_step;
    const double gemm_median = median_of(gemm_s);
    // GFLOP/s of the baseline, all ranks at once.
    auto gemm_gflops = [&](double seconds) { return gemms.flops() * size / seconds / 1e9; };
    const double sgemm_gflops = gemm_gflops(gemm_median);
    // The copy of the layers' GELU and softmax loops this CPU runs (host_loops.hpp).
    const char *loops = nn::host_loops::taken_for<float> ? nn::host_loops::isa() : "device kernels";
    if (rank == 0 && !opt.json) {
      fmt::print(
          "GPT-2 {} ({:.1f}M parameters), ZeRO stage {}, {} rank(s), {} x {} tokens per step, "
          "{} rounds; GELU and softmax loops: {}\n",
          cfg.name, P / 1e6, opt.stage, size, opt.global_batch, T, opt.steps, loops);
      fmt::print(
          "  gemm baseline   {:8.1f} ms  (KokkosBlas::gemm, same shapes, every rank) "
          "{:7.2f} GFLOP/s\n",
          gemm_median * 1e3, sgemm_gflops);
    }
    for (const Run &run : runs) {
      const double step_s = median_of(run.step_s);
      const Phases &phases = run.phases;
      const double model_gflops = model_flops / step_s / 1e9;
      std::vector<double> fracs, vs_privates;
      for (size_t i = 0; i < gemm_s.size(); ++i) {
        fracs.push_back(model_flops / run.step_s[i] / 1e9 / gemm_gflops(gemm_s[i]));
        if (run.shared && !runs.front().shared)
          vs_privates.push_back(runs.front().step_s[i] / run.step_s[i]);
      }
      const double frac = median_of(fracs);
      const auto [lowest, highest] = std::minmax_element(fracs.begin(), fracs.end());
      // Whether the engine had a window: none with one rank, or on a backend without one.
      const char *where = run.shared_bytes > 0 ? "shared" : "private";
      const double vs_private = median_of(vs_privates);
      if (rank != 0) continue;
      if (opt.json) {
        nlohmann::json j = {{"bench", "gpt2"},
                            {"config", cfg.name},
                            {"parameters", cfg.num_parameters()},
                            {"ranks", size},
                            {"zero_stage", opt.stage},
                            {"global_batch", opt.global_batch},
                            {"seq", T},
                            {"host_loops", loops},
                            {"buckets", where},
                            {"shared_bytes", run.shared_bytes},
                            {"step_s", step_s},
                            {"tokens_per_s", tokens_per_step / step_s},
                            {"model_gflops", model_gflops},
                            {"sgemm_gflops", sgemm_gflops},
                            {"frac_of_sgemm", frac},
                            {"frac_of_sgemm_min", *lowest},
                            {"frac_of_sgemm_max", *highest},
                            {"share_forward", phases.forward / phases.total},
                            {"share_backward", phases.backward / phases.total},
                            {"share_engine_step", phases.engine / phases.total},
                            {"share_exposed_comm", phases.comm / phases.total}};
        if (vs_private > 0) j["tokens_per_s_vs_private"] = vs_private;
        std::printf("%s\n", j.dump().c_str());
      } else {
        fmt::print("  {} buffers ({} MB in the node-shared window)\n", where,
                   run.shared_bytes / 1000000);
        fmt::print("  training step   {:8.1f} ms  {:8.0f} tokens/s  {:7.2f} model GFLOP/s{}\n",
                   step_s * 1e3, tokens_per_step / step_s, model_gflops,
                   vs_private > 0 ? fmt::format("  ({:.3f}x the tokens/s of private)", vs_private)
                                  : std::string());
        fmt::print("  model / gemm    {:.2f}  (the median of the rounds' ratios; {:.2f}-{:.2f})\n",
                   frac, *lowest, *highest);
        fmt::print(
            "  rank 0's step   forward {:.0f}%, backward {:.0f}%, engine step {:.0f}%; blocked on "
            "the engine's collectives {:.1f}%\n",
            100 * phases.forward / phases.total, 100 * phases.backward / phases.total,
            100 * phases.engine / phases.total, 100 * phases.comm / phases.total);
      }
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "zrt-bench gpt2: rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  zrt_finalize(ctx);
}

}  // namespace

void add_gpt2_bench(CLI::App &app) {
  auto opt = std::make_shared<Gpt2BenchOptions>();
  CLI::App *sub = app.add_subcommand(
      "gpt2", "GPT-2 training steps on zerort vs KokkosBlas::gemm on the model's shapes");
  sub->add_flag("--json", opt->json, "one JSON object");
  sub->add_option("--config", opt->config, "model (zrt-gpt2's --config)")->capture_default_str();
  sub->add_option("--batch", opt->global_batch, "sequences per step, over all ranks")
      ->capture_default_str();
  sub->add_option("--seq", opt->seq, "tokens per sequence")->capture_default_str();
  sub->add_option("--steps", opt->steps,
                  "timed rounds (after one warm-up): a step of each model, then the baseline")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  sub->add_option("--zero-stage", opt->stage, "ZeRO stage")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  sub->add_option("--buckets", opt->buckets,
                  "the engine's collective buffers: private, shared (its node-shared window), "
                  "or both: two models alive at once (twice the memory), their steps alternating")
      ->check(CLI::IsMember({"both", "shared", "private"}))
      ->capture_default_str();
  sub->callback([opt] { run_gpt2_bench(*opt); });
}
