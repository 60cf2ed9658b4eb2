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
// The rounds, the baseline and the figures are the harness's (model_bench.hpp).
#include "bench_bert.hpp"

#include <fmt/format.h>

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "model/bert_model.hpp"
#include "model_bench.hpp"
#include "training/model_state.hpp"

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

BenchModel set_up(const BertBenchOptions &opt, const BenchWorld &world) {
  const bert::BertConfig cfg = bert::BertConfig::from_name_or_file(opt.config);
  const int B = per_rank_batch(opt.global_batch, world.size), T = opt.seq;
  if (opt.seq > cfg.max_positions)
    throw std::invalid_argument(
        fmt::format("--seq {} exceeds the model's {} positions", opt.seq, cfg.max_positions));
  const int masked = std::max(1, int(std::nearbyint(0.15 * T)));
  // The model and its batch, alive as long as the harness times its step.
  struct Model {
    std::unique_ptr<training::ModelState> state;
    std::unique_ptr<bert::BertModel<float>> model;
    std::unique_ptr<bert::BertActivations<float>> acts;
    std::unique_ptr<bert::DeviceBatch> batch;
  };
  auto model = std::make_shared<Model>();
  training::EngineOptions eo;
  eo.stage = opt.stage;
  eo.optimizer.kind = ZRT_OPTIMIZER_LAMB;
  model->state = training::make_engine_model_state(world.context, bert::parameter_layout(cfg), eo);
  model->model = std::make_unique<bert::BertModel<float>>(cfg, model->state->store());
  model->acts = std::make_unique<bert::BertActivations<float>>(cfg, B, T, B * masked);
  model->batch = std::make_unique<bert::DeviceBatch>(B, T);
  model->batch->set(synthetic_batch(B, T, masked, cfg.vocab_size, 1234 + unsigned(world.rank)),
                    cfg.vocab_size, cfg.type_vocab_size);
  model->model->init_parameters(1337);
  const int P = model->batch->view().P;

  BenchModel m;
  m.title = fmt::format(
      "BERT {} ({:.1f}M parameters), LAMB, ZeRO stage {}, {} rank(s), {} x {} tokens per "
      "step, {} masked per sequence, {} rounds",
      cfg.name, cfg.num_parameters() / 1e6, opt.stage, world.size, opt.global_batch, T, masked,
      opt.steps);
  m.json = {{"bench", "bert"},
            {"config", cfg.name},
            {"parameters", cfg.num_parameters()},
            {"ranks", world.size},
            {"zero_stage", opt.stage},
            {"global_batch", opt.global_batch},
            {"seq", T},
            {"masked_per_sequence", masked}};
  const int64_t H = cfg.hidden, I = cfg.intermediate, L = cfg.num_layers, V = cfg.vocab_size;
  m.gemms = std::make_unique<GemmStep>(std::vector<GemmStep::Shape>{{H, H, 4 * cfg.num_layers},
                                                                    {H, I, cfg.num_layers},
                                                                    {I, H, cfg.num_layers},
                                                                    {H, H, 1, P},
                                                                    {H, V, 1, P},
                                                                    {H, H, 1, B},
                                                                    {H, 2, 1, B}},
                                       int64_t(B) * T);
  m.tokens_per_step = double(opt.global_batch) * T;
  const double per_token = 6.0 * double(L * (4 * H * H + 2 * H * I)) + 12.0 * L * H * T;
  const double heads = 6.0 * (double(H * H + V * H) * P + double(H * H + 2 * H) * B);
  m.model_flops = per_token * m.tokens_per_step + heads * world.size;
  BenchRun &run = m.runs.emplace_back();
  run.step = [model, P, B] {
    model->model->forward(*model->acts, model->batch->view());
    model->model->backward(*model->acts, model->batch->view(), 1.0f / float(P), 1.0f / float(B));
    model->state->step(1e-4);
  };
  return m;
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
  sub->add_option("--steps", opt->steps,
                  "timed rounds (after one warm-up): a step of the model, then the baseline")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  sub->add_option("--zero-stage", opt->stage, "ZeRO stage")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  sub->callback([opt] {
    run_model_bench("bert", opt->steps, opt->json,
                    [&](const BenchWorld &world) { return set_up(*opt, world); });
  });
}
