// zrt-bench gpt2: tokens/s and model FLOP/s of GPT-2 training steps (zrt-gpt2's model on
// zerort's engine, forward + backward + ZeRO step) against the FLOP/s KokkosBlas::gemm
// reaches on the same matrix shapes on the same ranks, measured in the same run.
//
// The rounds, the baseline and the figures are the harness's (model_bench.hpp).
// Model FLOPs per step are llm.c's (PaLM's) count: 6 x parameters x tokens for the matrix
// products, plus 12 x layers x channels x sequence length x tokens for attention. The
// baseline runs, on every rank at once, the gemms one training step of this rank's share
// makes: for each linear layer its forward product and both backward ones (input and
// weight gradients), for every block and the LM head.
#include "bench_gpt2.hpp"

#include <fmt/format.h>

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include <zerort/nn/host_loops.hpp>
#include "model/activations.hpp"
#include "model/gpt2_model.hpp"
#include "model_bench.hpp"
#include "timing.hpp"
#include "train/training_types.hpp"

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

BenchModel set_up(const Gpt2BenchOptions &opt, const BenchWorld &world) {
  const gpt2::Gpt2Config cfg = gpt2::Gpt2Config::from_name_or_file(opt.config);
  const int B = per_rank_batch(opt.global_batch, world.size), T = opt.seq;
  std::vector<int> tokens_host(size_t(B) * T);
  std::mt19937 rng(1234 + unsigned(world.rank));
  for (int &t : tokens_host)
    t = int(rng() % unsigned(cfg.vocab_size));
  auto tokens = std::make_shared<Kokkos::View<int *, gpt2::MemSpace>>("tokens", tokens_host.size());
  auto targets =
      std::make_shared<Kokkos::View<int *, gpt2::MemSpace>>("targets", tokens_host.size());
  using HostView = Kokkos::View<const int *, Kokkos::HostSpace, gpt2::Unmanaged>;
  Kokkos::deep_copy(*tokens, HostView(tokens_host.data(), tokens_host.size()));
  std::rotate(tokens_host.begin(), tokens_host.begin() + 1, tokens_host.end());
  Kokkos::deep_copy(*targets, HostView(tokens_host.data(), tokens_host.size()));

  BenchModel m;
  const double P = double(cfg.num_parameters());
  // The copy of the layers' GELU and softmax loops this CPU runs (host_loops.hpp).
  const char *loops =
      zrt::nn::host_loops::taken_for<float> ? zrt::nn::host_loops::isa() : "device kernels";
  m.title = fmt::format(
      "GPT-2 {} ({:.1f}M parameters), ZeRO stage {}, {} rank(s), {} x {} tokens per step, "
      "{} rounds; GELU and softmax loops: {}",
      cfg.name, P / 1e6, opt.stage, world.size, opt.global_batch, T, opt.steps, loops);
  m.json = {{"bench", "gpt2"},
            {"config", cfg.name},
            {"parameters", cfg.num_parameters()},
            {"ranks", world.size},
            {"zero_stage", opt.stage},
            {"global_batch", opt.global_batch},
            {"seq", T},
            {"host_loops", loops}};
  m.tokens_per_step = double(opt.global_batch) * T;
  m.model_flops = (6.0 * P + 12.0 * cfg.num_layers * cfg.channels * T) * m.tokens_per_step;
  const int64_t C = cfg.channels;
  m.gemms = std::make_unique<GemmStep>(std::vector<GemmStep::Shape>{{C, 3 * C, cfg.num_layers},
                                                                    {C, C, cfg.num_layers},
                                                                    {C, 4 * C, cfg.num_layers},
                                                                    {4 * C, C, cfg.num_layers},
                                                                    {C, cfg.vocab_size, 1}},
                                       int64_t(B) * T);

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
  struct Model {
    std::unique_ptr<training::ModelState> state;
    std::unique_ptr<gpt2::Gpt2Model<float>> model;
    std::unique_ptr<gpt2::Activations<float>> acts;
    Phases phases;
  };
  for (bool shared : {false, true})
    if (opt.buckets == "both" || (opt.buckets == "shared") == shared) {
      auto model = std::make_shared<Model>();
      gpt2::EngineOptions eo;
      eo.stage = opt.stage;
      eo.shared_buffers = shared ? 1 : 0;
      model->state = gpt2::make_engine_model_state(world.context, gpt2::parameter_layout(cfg), eo);
      const int64_t shared_bytes = model->state->memory().node_shared_bytes;
      model->model = std::make_unique<gpt2::Gpt2Model<float>>(cfg, model->state->store());
      model->acts =
          std::make_unique<gpt2::Activations<float>>(cfg, B, T, gpt2::ActivationMode::keep);
      model->model->init_parameters(1337);
      BenchRun &run = m.runs.emplace_back();
      run.name = shared ? "shared" : "private";
      // Whether the engine had a window: none with one rank, or on a backend without one.
      const char *where = shared_bytes > 0 ? "shared" : "private";
      run.label = fmt::format("{} buffers ({} MB in the node-shared window)", where,
                              shared_bytes / 1000000);
      run.json = {{"buckets", where}, {"shared_bytes", shared_bytes}};
      run.step = [model, tokens, targets, B, T] {
        Phases &phases = model->phases;
        const double t0 = wall_seconds();
        model->model->forward(*model->acts, *tokens, *targets, B, T);
        Kokkos::fence();
        const double t1 = wall_seconds();
        model->model->backward(*model->acts, *tokens, *targets, B, T, 1.0f);
        Kokkos::fence();
        const double t2 = wall_seconds();
        const training::StepReport r = model->state->step(1e-4);
        const double t3 = wall_seconds();
        phases.forward += t1 - t0;
        phases.backward += t2 - t1;
        phases.engine += t3 - t2;
        phases.comm += r.comm.wait_seconds;
        phases.total += t3 - t0;
      };
      run.report = [model](nlohmann::json &j, std::vector<std::string> &lines) {
        const Phases &p = model->phases;
        j = {{"share_forward", p.forward / p.total},
             {"share_backward", p.backward / p.total},
             {"share_engine_step", p.engine / p.total},
             {"share_exposed_comm", p.comm / p.total}};
        lines.push_back(fmt::format(
            "rank 0's step   forward {:.0f}%, backward {:.0f}%, engine step {:.0f}%; blocked on "
            "the engine's collectives {:.1f}%",
            100 * p.forward / p.total, 100 * p.backward / p.total, 100 * p.engine / p.total,
            100 * p.comm / p.total));
      };
    }
  return m;
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
  sub->callback([opt] {
    run_model_bench("gpt2", opt->steps, opt->json,
                    [&](const BenchWorld &world) { return set_up(*opt, world); });
  });
}
