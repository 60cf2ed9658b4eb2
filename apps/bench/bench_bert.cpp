// zrt-bench bert: tokens/s and model FLOP/s of BERT pretraining steps (zrt-bert's model on
// zerort's engine with LAMB: forward + backward + ZeRO step) against the FLOP/s
// KokkosBlas::gemm reaches on the same matrix shapes on the same ranks, in the same run.
//
// Model FLOPs per step count the matrix products 6 x weights x rows (forward and both
// backward products): every encoder layer's q, k, v, output, intermediate and output
// dense over all B x T positions, the MLM transform and decoder over the P masked
// positions only (as the model computes them), the pooler and NSP classifier over the B
// [CLS] rows; plus attention's 12 x layers x hidden x T per position. The baseline runs
// the same linear layers' gemms (attention's batched products aside, as for GPT-2).
// Batches are synthetic: random tokens, full-length sequences, round(0.15 T) masked each.
#include "bench_bert.hpp"

#include <fmt/format.h>
#include <mpi.h>
#include <zerort/zerort.h>

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "gemm_baseline.hpp"
#include "model/bert_model.hpp"
#include "training/engine_model_state.hpp"
#include "training/kokkos_device.hpp"

namespace {

struct BertBenchOptions {
  bool json = false;
  std::string config = "bert-base";
  int global_batch = 4;
  int seq = 128;
  int steps = 3;
  int stage = 2;
};

// A batch of B full sequences of T random tokens with @p masked positions each.
bert::HostBatch synthetic_batch(int B, int T, int masked, int vocab, unsigned seed) {
  std::mt19937 rng(seed);
  bert::HostBatch h;
  h.B = B;
  h.T = T;
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      h.input_ids.push_back(t == 0 ? 101 : int(1000 + rng() % unsigned(vocab - 1000)));
      h.segment_ids.push_back(t < T / 2 ? 0 : 1);
      // Every k-th position after [CLS], up to @p masked of them.
      const int k = std::max(1, (T - 1) / masked);
      const bool m = t > 0 && (t - 1) % k == 0 && (t - 1) / k < masked;
      h.mlm_labels.push_back(m ? int(1000 + rng() % unsigned(vocab - 1000)) : -1);
    }
    h.lengths.push_back(T);
    h.nsp_labels.push_back(int(rng() % 2));
  }
  return h;
}

void run_bert_bench(const BertBenchOptions &opt) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (const std::string why = training::cuda_unusable(); !why.empty()) {
    std::fprintf(stderr, "zrt-bench bert: rank %d: %s\n", rank, why.c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  zrt_context_h ctx = nullptr;
  if (zrt_init(MPI_COMM_WORLD, nullptr, &ctx) != ZRT_SUCCESS) {
    std::fprintf(stderr, "zrt-bench bert: zrt_init: %s\n", zrt_last_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int kokkos_argc = 0;
  // On the rank's GPU in a CUDA build; ends after zrt_finalize, at the end of this function.
  const auto kokkos = training::start_kokkos(ctx, kokkos_argc, nullptr);
  try {
    const bert::BertConfig cfg = bert::BertConfig::from_name_or_file(opt.config);
    if (opt.global_batch % size != 0)
      throw std::invalid_argument(
          fmt::format("--batch {} does not split over {} ranks", opt.global_batch, size));
    if (opt.seq > cfg.max_positions)
      throw std::invalid_argument(
          fmt::format("--seq {} exceeds the model's {} positions", opt.seq, cfg.max_positions));
    const int B = opt.global_batch / size, T = opt.seq;
    const int masked = std::max(1, int(std::nearbyint(0.15 * T)));
    training::EngineOptions eo;
    eo.stage = opt.stage;
    eo.optimizer.kind = ZRT_OPTIMIZER_LAMB;
    auto state = training::make_engine_model_state(ctx, bert::parameter_layout(cfg), eo);
    bert::BertModel<float> model(cfg, state->store());
    bert::BertActivations<float> acts(cfg, B, T, B * masked);
    bert::DeviceBatch batch(B, T);
    batch.set(synthetic_batch(B, T, masked, cfg.vocab_size, 1234 + unsigned(rank)), cfg.vocab_size,
              cfg.type_vocab_size);
    model.init_parameters(1337);
    const int P = batch.view().P;

    const double step_s = median_step_time(opt.steps, [&] {
      model.forward(acts, batch.view());
      model.backward(acts, batch.view(), 1.0f / float(P), 1.0f / float(B));
      state->step(1e-4);
    });
    state.reset();

    const int64_t H = cfg.hidden, I = cfg.intermediate, L = cfg.num_layers, V = cfg.vocab_size;
    GemmStep gemms({{H, H, 4 * cfg.num_layers},
                    {H, I, cfg.num_layers},
                    {I, H, cfg.num_layers},
                    {H, H, 1, P},
                    {H, V, 1, P},
                    {H, H, 1, B},
                    {H, 2, 1, B}},
                   int64_t(B) * T);
    const double gemm_s = median_step_time(opt.steps, [&] { gemms.run(); });

    const double tokens_per_step = double(opt.global_batch) * T;
    const double per_token = 6.0 * double(L * (4 * H * H + 2 * H * I)) + 12.0 * L * H * T;
    const double heads = 6.0 * (double(H * H + V * H) * P + double(H * H + 2 * H) * B);
    const double model_flops = per_token * tokens_per_step + heads * size;
    const double model_gflops = model_flops / step_s / 1e9;
    const double sgemm_gflops = gemms.flops() * size / gemm_s / 1e9;  // all ranks at once
    const double frac = model_gflops / sgemm_gflops;
    if (rank == 0) {
      if (opt.json) {
        nlohmann::json j = {{"bench", "bert"},
                            {"config", cfg.name},
                            {"parameters", cfg.num_parameters()},
                            {"ranks", size},
                            {"zero_stage", opt.stage},
                            {"global_batch", opt.global_batch},
                            {"seq", T},
                            {"masked_per_sequence", masked},
                            {"step_s", step_s},
                            {"tokens_per_s", tokens_per_step / step_s},
                            {"model_gflops", model_gflops},
                            {"sgemm_gflops", sgemm_gflops},
                            {"frac_of_sgemm", frac}};
        std::printf("%s\n", j.dump().c_str());
      } else {
        fmt::print(
            "BERT {} ({:.1f}M parameters), LAMB, ZeRO stage {}, {} rank(s), {} x {} tokens per "
            "step, {} masked per sequence\n",
            cfg.name, cfg.num_parameters() / 1e6, opt.stage, size, opt.global_batch, T, masked);
        fmt::print("  training step   {:8.1f} ms  {:8.0f} tokens/s  {:7.2f} model GFLOP/s\n",
                   step_s * 1e3, tokens_per_step / step_s, model_gflops);
        fmt::print(
            "  gemm baseline   {:8.1f} ms  (KokkosBlas::gemm, same shapes, every rank) "
            "{:7.2f} GFLOP/s\n",
            gemm_s * 1e3, sgemm_gflops);
        fmt::print("  model / gemm    {:.2f}\n", frac);
      }
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "zrt-bench bert: rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  zrt_finalize(ctx);
}

}  // namespace

void add_bert_bench(CLI::App &app) {
  auto opt = std::make_shared<BertBenchOptions>();
  CLI::App *sub = app.add_subcommand(
      "bert", "BERT pretraining steps on zerort vs KokkosBlas::gemm on the model's shapes");
  sub->add_flag("--json", opt->json, "one JSON object");
  sub->add_option("--config", opt->config, "model (zrt-bert's --config)")->capture_default_str();
  sub->add_option("--batch", opt->global_batch, "sequences per step, over all ranks")
      ->capture_default_str();
  sub->add_option("--seq", opt->seq, "tokens per sequence")->capture_default_str();
  sub->add_option("--steps", opt->steps, "timed steps (after one warm-up)")->capture_default_str();
  sub->add_option("--zero-stage", opt->stage, "ZeRO stage")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  sub->callback([opt] { run_bert_bench(*opt); });
}
