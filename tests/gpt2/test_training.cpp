// The training loop's pieces: learning-rate schedule, token sampling, and the loop itself
// on Moby Dick through zerort's engine on one rank (the loss falls; accumulation; metrics
// and plots; a clean stop on SIGUSR1).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <csignal>
#include <fstream>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "data_cache.hpp"
#include "train/sampler.hpp"
#include "train/trainer.hpp"
#include "world.hpp"

namespace gpt2::test {
namespace {

// A warmup-then-cosine schedule (the trainers' default decay).
LrSchedule schedule(double max_lr, double min_lr, int64_t warmup, int64_t total) {
  LrSchedule s;
  s.max_lr = max_lr, s.min_lr = min_lr, s.warmup_steps = warmup, s.total_steps = total;
  return s;
}

TEST(LrSchedule, WarmsUpThenDecaysToTheFloor) {
  LrSchedule s = schedule(1e-3, 1e-4, 10, 110);
  EXPECT_DOUBLE_EQ(s.at(0), 1e-4);  // 1/10 of the peak
  EXPECT_DOUBLE_EQ(s.at(4), 5e-4);
  EXPECT_DOUBLE_EQ(s.at(9), 1e-3);           // warmup ends at the peak
  EXPECT_DOUBLE_EQ(s.at(10), 1e-3);          // decay starts from it
  EXPECT_NEAR(s.at(10 + 50), 5.5e-4, 1e-5);  // cosine: halfway at mid-decay
  EXPECT_DOUBLE_EQ(s.at(109), 1e-4);         // the floor at the last step
  EXPECT_DOUBLE_EQ(s.at(500), 1e-4);         // and after
  for (int64_t t = 10; t < 109; ++t)
    EXPECT_GT(s.at(t), s.at(t + 1)) << t;
  LrSchedule flat = schedule(1e-3, 1e-4, 0, 1);
  EXPECT_DOUBLE_EQ(flat.at(0), 1e-3);
  EXPECT_THROW((schedule(1e-4, 1e-3, 0, 10).validate()), std::invalid_argument);
  EXPECT_THROW((schedule(1e-3, 0, -1, 10).validate()), std::invalid_argument);
}

TEST(Sampler, PicksTokens) {
  const std::vector<float> logits = {0.5f, 3.0f, 1.0f, 2.9f, -1.0f};
  EXPECT_EQ(pick_token(logits, 0.0, 0, 0.99), 1);  // temperature 0: greedy
  EXPECT_EQ(pick_token(logits, 1.0, 1, 0.99), 1);  // top-1: greedy too
  // Top-2 never leaves {1, 3}; over many draws both appear, in the softmax's proportion.
  std::map<int, int> count;
  const int draws = 2000;
  for (int i = 0; i < draws; ++i)
    ++count[pick_token(logits, 1.0, 2, (i + 0.5) / draws)];
  EXPECT_EQ(count.size(), 2u);
  const double p1 = std::exp(3.0) / (std::exp(3.0) + std::exp(2.9));
  EXPECT_NEAR(count[1] / double(draws), p1, 0.01);
  // A high temperature flattens the distribution: all five tokens come up.
  count.clear();
  for (int i = 0; i < draws; ++i)
    ++count[pick_token(logits, 100.0, 0, (i + 0.5) / draws)];
  EXPECT_EQ(count.size(), 5u);
  EXPECT_NEAR(count[4] / double(draws), 0.2, 0.02);
}

TEST(Signals, SigusrAndSigtermAskToStop) {
  install_stop_signals();
  clear_stop_signal();
  EXPECT_EQ(stop_signal(), 0);
  std::raise(SIGUSR1);
  EXPECT_EQ(stop_signal(), SIGUSR1);
  std::raise(SIGTERM);
  EXPECT_EQ(stop_signal(), SIGTERM);
  clear_stop_signal();
}

TrainOptions small_run(int64_t steps) {
  TrainOptions o;
  o.config = Gpt2Config::preset("d2");
  o.data_dir = data_cache() / "moby-dick";
  o.tokenizer_dir = data_cache() / "tokenizer";
  o.batch = 4;
  o.seq = 32;
  o.steps = steps;
  o.lr = schedule(3e-3, 3e-4, 5, steps);
  o.eval_every = 0;
  o.eval_batches = 4;
  o.sample_every = -1;
  o.quiet = true;
  return o;
}

TEST(Training, LossFallsOnMobyDick) {
  TrainOptions o = small_run(50);
  auto state = engine_state(o);
  TrainResult r = train(o, *state, world());
  ASSERT_EQ(r.losses.size(), 50u);
  const double first = r.losses.front();
  const double last5 = std::accumulate(r.losses.end() - 5, r.losses.end(), 0.0) / 5;
  std::printf(
      "  d2 on moby dick, 50 steps of 4x32 tokens: loss %.3f -> %.3f (last 5), val "
      "%.3f\n",
      first, last5, r.evals.back().val_loss);
  EXPECT_NEAR(first, std::log(50257.0), 0.1);
  EXPECT_LT(last5, first - 2.0);
  EXPECT_LT(r.evals.back().val_loss, 8.5);
  EXPECT_FALSE(r.stopped);
}

TEST(Training, AccumulationEqualsALargerBatch) {
  // 2 micro-steps of 2 sequences read the same 4 sequences as one batch of 4 (the loader
  // takes consecutive chunks), so the steps match up to float rounding: the engine sums
  // the micro-steps' gradients and divides by their number.
  TrainOptions big = small_run(3), accum = small_run(3);
  accum.batch = 2;
  accum.optimizer.accumulation_steps = 2;
  for (int stage : {2}) {
    SCOPED_TRACE(testing::Message() << "stage " << stage);
    auto s1 = engine_state(big, {.stage = stage});
    auto s2 = engine_state(accum, {.stage = stage});
    TrainResult a = train(big, *s1, world()), b = train(accum, *s2, world());
    ASSERT_EQ(a.losses.size(), b.losses.size());
    for (size_t i = 0; i < a.losses.size(); ++i)
      EXPECT_NEAR(a.losses[i], b.losses[i], 2e-4) << "step " << i + 1;
    EXPECT_GT(a.losses.front() - a.losses.back(), 0.05);  // the steps did update
  }
}

TEST(Training, StopsCleanlyOnSigusr1) {
  TrainOptions o = small_run(10);
  SignalAtStep state(engine_state(o), 3);
  TrainResult r = train(o, state, world());
  clear_stop_signal();
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.stop_signal, SIGUSR1);
  EXPECT_EQ(r.steps_done, 3);  // the step in flight completes
  EXPECT_EQ(r.losses.size(), 3u);
}

TEST(Training, StopsAsDivergedAfterSkippedSteps) {
  // A learning rate that blows the weights up after the first update: every later gradient
  // is NaN, the engine skips each step (check_grad_overflow), and after max_skipped_steps
  // of them in a row the run stops instead of training on.
  TrainOptions o = small_run(20);
  o.lr = schedule(1e30, 1e29, 0, 20);
  o.max_skipped_steps = 3;
  auto state = engine_state(o);
  try {
    train(o, *state, world());
    ADD_FAILURE() << "the run did not stop";
  } catch (const TrainingDiverged &e) {
    EXPECT_NE(std::string(e.what()).find("3 steps in a row (to step 4)"), std::string::npos)
        << e.what();
  }
}

TEST(Training, WritesMetricsAndPlots) {
  ScratchDir dir("zrt_gpt2_metrics");
  TrainOptions o = small_run(4);
  o.eval_every = 2;
  o.sample_every = 0;
  o.sample.tokens = 8;
  o.json_metrics = dir / "metrics.jsonl";
  o.plot = true;
  o.plot_dir = dir.path();
  auto state = engine_state(o, {.stage = 0});
  TrainResult r = train(o, *state, world());

  std::ifstream in(o.json_metrics);
  std::map<std::string, int> types;
  std::string line;
  std::vector<nlohmann::json> steps;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    ++types[j["type"].get<std::string>()];
    if (j["type"] == "step") steps.push_back(j);
  }
  EXPECT_EQ(types, (std::map<std::string, int>{
                       {"run", 1}, {"step", 4}, {"eval", 2}, {"sample", 1}, {"end", 1}}));
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[3]["step"], 4);
  EXPECT_DOUBLE_EQ(steps[3]["loss"].get<double>(), r.losses[3]);
  EXPECT_GT(steps[3]["tokens_per_s"].get<double>(), 0);
  // Stage 0, fp32, AdamW: 16 bytes a parameter (the layout pads each bucket a little).
  const double states = steps[3]["mem_model_states"].get<double>();
  EXPECT_NEAR(states / (16.0 * double(o.config.num_parameters())), 1.0, 0.02);
  EXPECT_EQ(steps[3]["mem_model_states"].get<int64_t>(), r.memory.total());
  EXPECT_EQ(r.stage0_bytes, 16 * o.config.num_parameters());
  EXPECT_GT(steps[3]["mem_rss"].get<int64_t>(), steps[3]["mem_model_states"].get<int64_t>());
  // Stage 0 reduces the whole (padded) gradient buffer once a step, with one all-reduce a
  // bucket, even on one rank; the wait is this rank's.
  for (const nlohmann::json &j : steps) {
    EXPECT_EQ(j["comm_all_reduce_bytes"].get<int64_t>(), r.memory.parameters) << j.dump();
    EXPECT_EQ(j["comm_reduce_scatter_bytes"].get<int64_t>(), 0) << j.dump();
    EXPECT_EQ(j["comm_all_gather_bytes"].get<int64_t>(), 0) << j.dump();
    EXPECT_GE(j["comm_wait_ms"].get<double>(), 0.0) << j.dump();
    EXPECT_LT(j["comm_wait_ms"].get<double>(), j["ms"].get<double>()) << j.dump();
  }
  EXPECT_FALSE(r.last_sample.empty());

  for (const auto &png : {r.plots.loss_png, r.plots.memory_png}) {
    std::string bytes = read_bytes(png);
    ASSERT_GT(bytes.size(), 1000u) << png;
    EXPECT_EQ(bytes.substr(1, 3), "PNG") << png;
  }
}

// Recompute keeps no block activations but the outputs: nothing for offload to move.
TEST(Training, RefusesOffloadWithRecompute) {
  TrainOptions o = small_run(1);
  o.recompute = true;
  o.offload_activations = true;
  auto state = engine_state(o);
  try {
    Trainer t(o, *state, world());
    FAIL() << "accepted --offload-activations with --recompute";
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find("do not combine"), std::string::npos) << e.what();
  }
}

// The offloaded bytes are in the metrics beside the resident ones.
TEST(Training, ReportsOffloadedActivations) {
  ScratchDir dir("zrt_gpt2_offload");
  TrainOptions o = small_run(2);
  o.config.num_layers = 3;  // block 0 is offloaded
  o.offload_activations = true;
  o.json_metrics = dir / "metrics.jsonl";
  auto state = engine_state(o);
  TrainResult r = train(o, *state, world());
  EXPECT_GT(r.offloaded_activation_bytes, 0);
  std::ifstream in(o.json_metrics);
  std::string line;
  nlohmann::json last;
  while (std::getline(in, line))
    if (nlohmann::json j = nlohmann::json::parse(line); j["type"] == "step") last = j;
  EXPECT_EQ(last["mem_activations_offloaded"].get<int64_t>(), r.offloaded_activation_bytes);
  EXPECT_EQ(last["mem_activations"].get<int64_t>(), r.activation_bytes);
}

TEST(Training, RefusesDataOfAnotherVocabulary) {
  TrainOptions o = small_run(1);
  o.config.vocab_size = 1000;  // Moby Dick's ids go up to 50256
  auto state = engine_state(o);
  try {
    Trainer t(o, *state, world());
    FAIL() << "accepted out-of-range token ids";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("is outside the model's vocabulary of 1000"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace gpt2::test
