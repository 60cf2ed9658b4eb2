// BERT's pretraining on zerort's engine, with LAMB, at np 2 (and its own np 1 run for
// comparison): the loss falls and MLM accuracy rises on Moby Dick; two ranks equal one
// rank with the same global batch; stages 0, 2 and 3 give bitwise-equal parameters in
// deterministic mode; a stopped-and-resumed run is bitwise an uninterrupted one; the memory
// per rank follows the ZeRO formulas; bad data, vocabularies and checkpoints are refused.
#include <gtest/gtest.h>
#include <mpi.h>
#include <zerort/zerort.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "model/bert_layout.hpp"
#include "mpi_context.hpp"
#include "train/bert_trainer.hpp"
#include "training/model_state.hpp"
#include "training/signals.hpp"
#include "training_fixture.hpp"

namespace bert::test {
namespace {

using apps_test::all_parameters;
using apps_test::same_on_all_ranks;
using apps_test::SharedDir;
using apps_test::SignalAtStep;

std::filesystem::path data_cache() {
  const char *dir = std::getenv("BERT_DATA_CACHE");
  return dir ? std::filesystem::path(dir) : std::filesystem::path("apps/data/cache");
}

const World &world() {
  static const World w{apps_test::rank(), apps_test::size(), apps_test::comm()};
  return w;
}

BertTrainOptions run_options(int batch, int64_t steps, int accumulation = 1) {
  BertTrainOptions o;
  o.config = BertConfig::preset("bert-tiny");
  o.data_dir = data_cache() / "bert" / "moby-dick";
  o.vocab_path = data_cache() / "tokenizer" / "bert-vocab.txt";
  o.batch = batch;
  o.seq = 64;
  o.steps = steps;
  o.lr.max_lr = 1e-2;
  o.lr.min_lr = 0;
  o.lr.warmup_steps = 2;
  o.lr.decay = training::LrDecay::polynomial;
  o.optimizer.kind = ZRT_OPTIMIZER_LAMB;
  o.optimizer.beta2 = 0.999;
  o.optimizer.eps = 1e-6;
  o.optimizer.weight_decay = 0.01;
  o.optimizer.accumulation_steps = accumulation;
  o.eval_every = 0;
  o.eval_batches = 2;
  o.quiet = true;
  return o;
}

struct StateSpec {
  int stage = 2;
  zrt_dtype_t dtype = ZRT_DTYPE_FP32;
  bool deterministic = false;
};

std::unique_ptr<training::ModelState> engine_state(const BertTrainOptions &o, StateSpec s = {},
                                                   zrt_context_h ctx = apps_test::context()) {
  training::EngineOptions e;
  e.stage = s.stage;
  e.dtype = s.dtype;
  e.deterministic = s.deterministic;
  e.optimizer = o.optimizer;
  e.lr = o.lr.max_lr;
  e.reduce_bucket_bytes = 1 << 20;  // several buckets even for bert-tiny
  return training::make_engine_model_state(ctx, parameter_layout(o.config), e);
}

BertTrainResult train(const BertTrainOptions &o, training::ModelState &state,
                      const World &w = world()) {
  return BertTrainer(o, state, w).run();
}

std::vector<double> losses(const BertTrainResult &r) {
  std::vector<double> out;
  for (const BertStepLosses &s : r.steps)
    out.push_back(s.loss);
  return out;
}

class Np2 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (world().size != 2) GTEST_SKIP() << "needs 2 ranks";
  }
};

// 100 steps of bert-tiny: the MLM loss leaves ln(30522) and the model learns the frequent
// tokens; the held-out loss falls with it.
TEST_F(Np2, LossFallsAndMlmAccuracyRises) {
  BertTrainOptions o = run_options(8, 100);
  o.lr.max_lr = 2e-2;
  auto state = engine_state(o);
  const BertTrainResult r = train(o, *state);
  ASSERT_EQ(r.steps.size(), 100u);
  ASSERT_EQ(r.evals.size(), 1u);
  auto mean = [&](size_t from, size_t to, auto field) {
    double s = 0;
    for (size_t i = from; i < to; ++i)
      s += field(r.steps[i]);
    return s / double(to - from);
  };
  const double mlm_first = r.steps[0].mlm, mlm_last = mean(90, 100, [](auto &s) { return s.mlm; });
  const double acc_first = mean(0, 3, [](auto &s) { return s.mlm_accuracy; });
  const double acc_last = mean(80, 100, [](auto &s) { return s.mlm_accuracy; });
  if (world().rank == 0)
    std::printf(
        "  MLM loss %.3f -> %.3f, MLM accuracy %.3f -> %.3f, NSP loss %.3f -> %.3f; "
        "held out: loss %.3f, MLM accuracy %.3f\n",
        mlm_first, mlm_last, acc_first, acc_last, r.steps[0].nsp, r.steps.back().nsp,
        r.evals[0].loss, r.evals[0].mlm_accuracy);
  EXPECT_NEAR(mlm_first, std::log(30522.0), 0.2);
  EXPECT_NEAR(r.steps[0].nsp, std::log(2.0), 0.1);
  EXPECT_LT(mlm_last, mlm_first - 2.5);
  EXPECT_GT(acc_last, acc_first + 0.03);
  EXPECT_LT(r.evals[0].mlm, mlm_first - 2.5);
  EXPECT_TRUE(same_on_all_ranks(all_parameters(*state)));
}

// The same global batch (16 sequences) as 2 ranks x 8 and as 1 rank x 8 x 2 micro-steps:
// the same examples, the same masked positions, the same losses up to rounding.
TEST_F(Np2, TwoRanksEqualOneWithTheSameGlobalBatch) {
  const BertTrainOptions two = run_options(8, 3);
  auto state = engine_state(two);
  const BertTrainResult parallel = train(two, *state);
  int ok = 1;
  if (world().rank == 0) {
    zrt_init_params_t ip = {};
    ip.field_mask = ZRT_INIT_PARAM_FIELD_BIND;
    ip.bind = ZRT_BIND_NONE;
    zrt_context_h self = nullptr;
    const zrt_status_t st = zrt_init(MPI_COMM_SELF, &ip, &self);
    EXPECT_EQ(st, ZRT_SUCCESS) << zrt_last_error_message();
    ok = st == ZRT_SUCCESS;
    if (ok) {
      std::vector<BertStepLosses> serial;
      {
        const BertTrainOptions one = run_options(8, 3, 2);
        auto alone = engine_state(one, {.stage = 0}, self);
        World w{0, 1, nullptr};
        zrt_context_comm(self, &w.comm);
        serial = train(one, *alone, w).steps;
      }
      EXPECT_EQ(serial.size(), 3u);
      serial.resize(3);
      for (size_t i = 0; i < 3; ++i) {
        const BertStepLosses &p = parallel.steps[i], &s = serial[i];
        EXPECT_NEAR(p.mlm, s.mlm, 2e-4) << "step " << i + 1;
        EXPECT_NEAR(p.nsp, s.nsp, 2e-4) << "step " << i + 1;
        EXPECT_EQ(p.mlm_accuracy, s.mlm_accuracy) << "step " << i + 1;
        ok &= std::abs(p.mlm - s.mlm) < 2e-4 && std::abs(p.nsp - s.nsp) < 2e-4;
        std::printf("  step %zu: np 2 mlm %.6f nsp %.6f; np 1 mlm %.6f nsp %.6f\n", i + 1, p.mlm,
                    p.nsp, s.mlm, s.nsp);
      }
      EXPECT_EQ(zrt_finalize(self), ZRT_SUCCESS);
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  EXPECT_TRUE(ok);
}

// LAMB's trust ratios need each tensor's whole norms: at stages 1-3 the engine sums them
// over the shards. In deterministic mode every stage gives the same bits.
TEST_F(Np2, DeterministicStages0And2And3AreBitwiseEqualWithLamb) {
  const BertTrainOptions o = run_options(4, 3);
  std::vector<float> reference;
  std::vector<double> reference_losses;
  for (int stage : {0, 2, 3}) {
    SCOPED_TRACE(testing::Message() << "stage " << stage);
    auto state = engine_state(o, {.stage = stage, .deterministic = true});
    const BertTrainResult r = train(o, *state);
    std::vector<float> params = all_parameters(*state);
    if (reference.empty()) {
      reference = params;
      reference_losses = losses(r);
      continue;
    }
    ASSERT_EQ(params.size(), reference.size());
    size_t differ = 0;
    for (size_t i = 0; i < params.size(); ++i)
      differ += std::memcmp(&params[i], &reference[i], sizeof(float)) != 0;
    EXPECT_EQ(differ, 0u) << "parameters that differ from stage 0";
    EXPECT_EQ(losses(r), reference_losses);
    if (world().rank == 0)
      std::printf("  stage %d vs stage 0: %zu of %zu parameters differ; last loss %.6f\n", stage,
                  differ, params.size(), r.steps.back().loss);
  }
}

// SIGUSR1 on rank 1 during step 2 of 4 stops both ranks after it with a checkpoint; the run
// resumed from it at another stage ends bitwise where the uninterrupted one did.
TEST_F(Np2, ResumedRunEqualsAnUninterruptedOne) {
  SharedDir dir("zrt_bert_resume");
  const BertTrainOptions o = run_options(4, 4);
  auto whole = engine_state(o, {.stage = 2, .deterministic = true});
  const BertTrainResult full = train(o, *whole);
  const std::vector<float> full_params = all_parameters(*whole);
  whole.reset();

  BertTrainOptions first = o;
  first.save_path = dir / "ckpt.h5";
  SignalAtStep stopped(engine_state(o, {.stage = 2, .deterministic = true}),
                       world().rank == 1 ? 2 : -1);
  const BertTrainResult part = train(first, stopped);
  training::clear_stop_signal();
  EXPECT_TRUE(part.stopped);
  EXPECT_EQ(part.steps_done, 2);
  EXPECT_TRUE(std::filesystem::exists(first.save_path));

  BertTrainOptions second = o;
  second.resume_path = first.save_path;
  auto resumed = engine_state(o, {.stage = 3, .deterministic = true});
  const BertTrainResult rest = train(second, *resumed);
  EXPECT_EQ(rest.first_step, 2);
  EXPECT_EQ(rest.steps_done, 4);
  ASSERT_EQ(rest.steps.size(), 2u);
  EXPECT_EQ(rest.steps[0].loss, full.steps[2].loss);
  EXPECT_EQ(rest.steps[1].loss, full.steps[3].loss);
  const std::vector<float> params = all_parameters(*resumed);
  ASSERT_EQ(params.size(), full_params.size());
  EXPECT_EQ(std::memcmp(params.data(), full_params.data(), params.size() * sizeof(float)), 0);
}

// Model states per rank, without buckets: stage 2 holds fp32 parameters whole and a shard
// of gradients and LAMB's two moments (4P + 12P/N); stage 3 shards all (16P/N); bf16 at
// stage 2: 2P of parameters and 14P/N (gradients, fp32 master weights, moments).
TEST_F(Np2, MemoryPerRankFollowsTheZeroFormulas) {
  const BertTrainOptions o = run_options(2, 1);
  const double P = double(o.config.num_parameters()), N = 2;
  struct Case {
    int stage;
    zrt_dtype_t dtype;
    double bytes;
  };
  for (Case c : {Case{2, ZRT_DTYPE_FP32, 4 * P + 12 * P / N}, Case{3, ZRT_DTYPE_FP32, 16 * P / N},
                 Case{2, ZRT_DTYPE_BF16, 2 * P + 14 * P / N}}) {
    SCOPED_TRACE(testing::Message() << "stage " << c.stage << " dtype " << int(c.dtype));
    auto state = engine_state(o, {.stage = c.stage, .dtype = c.dtype});
    const BertTrainResult r = train(o, *state);
    const training::StateMemory &m = r.memory;
    EXPECT_NEAR(double(m.total() - m.buckets) / c.bytes, 1.0, 0.02);
    EXPECT_EQ(r.stage0_bytes, int64_t(16 * P));
    EXPECT_LT(m.total() - m.buckets, r.stage0_bytes);
  }
}

std::string trainer_error(const BertTrainOptions &o, training::ModelState &state) {
  try {
    BertTrainer t(o, state, world());
  } catch (const std::exception &e) {
    return e.what();
  }
  return "";
}

// Refused before training, each with the file and the reason: GPT-2's token files, a
// missing or foreign vocabulary, a sequence beyond the model's positions, checkpoints of
// another model or program.
TEST_F(Np2, RefusesBadDataVocabulariesAndCheckpoints) {
  SharedDir dir("zrt_bert_bad");
  BertTrainOptions good = run_options(2, 1);
  good.save_path = dir / "tiny.h5";
  auto state = engine_state(good);
  train(good, *state);

  BertTrainOptions o = good;
  o.save_path.clear();
  o.data_dir = data_cache() / "moby-dick";  // GPT-2's llm.c token files
  EXPECT_NE(trainer_error(o, *state).find("GPT-2 (llm.c) token file"), std::string::npos)
      << trainer_error(o, *state);
  o = good;
  o.save_path.clear();
  o.vocab_path = dir / "none.txt";
  EXPECT_NE(trainer_error(o, *state).find("none.txt"), std::string::npos);
  o = good;
  o.save_path.clear();
  o.vocab_path = data_cache() / "tokenizer" / "encoder.json";  // GPT-2's vocabulary
  EXPECT_NE(trainer_error(o, *state).find("encoder.json"), std::string::npos)
      << trainer_error(o, *state);
  o = good;
  o.save_path.clear();
  o.seq = 600;
  EXPECT_NE(trainer_error(o, *state).find("max_position_embeddings"), std::string::npos);

  BertTrainOptions other = good;
  other.save_path.clear();
  other.config = BertConfig::preset("bert-mini");
  other.resume_path = good.save_path;
  auto other_state = engine_state(other);
  const std::string e = trainer_error(other, *other_state);
  EXPECT_NE(e.find("the checkpoint is of another model (bert-tiny: num_hidden_layers 2"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace bert::test
