// zrt-bert: pretrains BERT (masked LM + next-sentence prediction; Kokkos, KokkosKernels'
// gemm) on zerort's ZeRO engine, with LAMB.
//
//   apps/data/prepare --model bert
//   mpirun -np 2 zrt-bert --config bert-tiny --steps 200 --zero-stage 2
//   zrt-bert --help
//
// Checkpoints, signals and exit codes as zrt-gpt2's: --save writes one at the end, every
// --save-every steps and on SIGUSR1/SIGTERM, after which the program exits with status 75
// (EX_TEMPFAIL: "requeue me"); --resume continues from one, at any ZeRO stage and world
// size.
#include <fmt/format.h>
#include <zerort/zerort.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "data/data_location.hpp"
#include "model/bert_layout.hpp"
#include "train/bert_trainer.hpp"
#include "training/cli_checks.hpp"
#include "training/engine_cli.hpp"
#include "training/job_settings.hpp"
#include "training/run_cli.hpp"
#include "training/trainer_main.hpp"

namespace {

using training::kNonNegative;
using training::kPositive;

struct Cli {
  bert::BertTrainOptions train;
  std::string config = "bert-tiny";
  training::EngineCli engine;  // --zero-stage, --dtype, --optimizer, --deterministic, ...
  std::string data = (gpt2::data_root() / "bert" / "moby-dick").string();
  std::string vocab;
  double lr = 1e-3;
  double min_lr_frac = 0.0;
  std::optional<int64_t> warmup;
  double power = 1.0;
  training::RunCli run;  // --steps, --grad-accum, --save, --resume, ... (the loop's)
};

void add_options(CLI::App &app, Cli &c) {
  bert::BertTrainOptions &t = c.train;
  app.add_option("--config", c.config,
                 "model: bert-tiny (2 layers, 128 hidden), bert-mini (4/256), bert-small (4/512), "
                 "bert-medium (8/512), bert-base (12/768), bert-large (24/1024), or a JSON file "
                 "with Hugging Face's BertConfig keys")
      ->capture_default_str();
  c.engine.optimizer = "lamb";
  c.engine.add_to(app,
                  "optimizer (default lamb, BERT's large-batch optimizer: Adam with a "
                  "per-tensor trust ratio)");
  c.run.add_to(app, t, "bert");
  app.add_option("--batch", t.batch, "sequences per micro-step and rank")
      ->check(kPositive)
      ->capture_default_str();
  app.add_option("--seq", t.seq, "tokens per sequence, [CLS] and [SEP]s included (at least 8)")
      ->check(CLI::Range(8, 1 << 20))
      ->capture_default_str();
  app.add_option("--lr", c.lr, "peak learning rate")->check(kPositive)->capture_default_str();
  app.add_option("--min-lr-frac", c.min_lr_frac,
                 "final learning rate, as a share of --lr (BERT decays to 0)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--warmup", c.warmup, "linear warmup steps (default: a tenth of --steps)")
      ->check(kNonNegative);
  app.add_option("--decay-power", c.power,
                 "after warmup the rate falls as (1 - progress)^power (1: linear, BERT's)")
      ->check(kPositive)
      ->capture_default_str();
  app.add_option("--weight-decay", t.optimizer.weight_decay,
                 "decoupled weight decay (not on biases and LayerNorm)")
      ->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--data-seed", t.data_seed, "seed of the sentence pairs, their order and masks")
      ->capture_default_str();
  app.add_option("--mask-prob", t.mask_prob, "share of tokens masked for MLM")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--max-predictions", t.max_predictions,
                 "masked tokens per sequence at most (default: round(mask-prob x seq))")
      ->check(kPositive);
  app.add_option("--data", c.data,
                 "folder with train.bin and val.bin (apps/data/prepare --model bert)")
      ->capture_default_str();
  app.add_option("--vocab", c.vocab,
                 "the WordPiece vocabulary (vocab.txt form) the data was made with (default: "
                 "tokenizer/bert-vocab.txt in DATA/../.., DATA/.. or the data folder)");
  app.add_option("--eval-batches", t.eval_batches, "batches per evaluation")
      ->check(kPositive)
      ->capture_default_str();
  app.add_option("--dump-logits", c.train.dump_logits,
                 "write the MLM and NSP probabilities and the pooled output of one validation "
                 "batch to this file (float32), its inputs to FILE.json, and stop without "
                 "training");
}

// The vocabulary beside prepare's example files (DATA = ROOT/bert/CORPUS: ROOT/tokenizer),
// else the data root's.
std::filesystem::path default_vocab(const std::filesystem::path &data) {
  const std::filesystem::path name = std::filesystem::path("tokenizer") / "bert-vocab.txt";
  std::error_code ec;
  for (const std::filesystem::path &root : {data.parent_path().parent_path(), data.parent_path()})
    if (std::filesystem::exists(root / name, ec)) return root / name;
  return gpt2::data_root() / name;
}

// The engine settings of the command line, with zrt-bert's defaults.
training::TrainerSettings trainer_settings(const Cli &c, const CLI::App &app) {
  const bert::BertTrainOptions &t = c.train;
  auto given = [&](const char *option) { return app.count(option) > 0; };
  training::TrainerSettings s;
  s.program = "zrt-bert";
  c.engine.fill(s, app);
  s.lr = {c.lr, given("--lr")};
  training::EngineCli::fill_training(s, t.optimizer, t.batch, t.steps, app);
  s.global_batch = c.run.global_batch;
  s.hidden = t.config.hidden;
  s.warmup = t.lr.warmup_steps;
  for (const char *option : {"--warmup", "--min-lr-frac", "--decay-power"})
    if (given(option)) s.schedule_options.push_back(option);
  return s;
}

}  // namespace

int main(int argc, char **argv) {
  Cli cli;
  // BERT's LAMB settings (You et al.; NVIDIA's BERT recipe): beta2 0.999, eps 1e-6, weight
  // decay 0.01.
  cli.train.optimizer.kind = ZRT_OPTIMIZER_LAMB;
  cli.train.optimizer.beta2 = 0.999;
  cli.train.optimizer.eps = 1e-6;
  cli.train.optimizer.weight_decay = 0.01;
  CLI::App app{"zrt-bert: pretrain BERT (Kokkos) on zerort"};
  add_options(app, cli);
  auto before_context = [&] { cli.engine.before_context(); };
  return training::trainer_main(
      argc, argv, "zrt-bert", app, before_context, [&](const training::AppWorld &job) {
        bert::World world{job.rank(), job.size(), job.comm(), job.context()};
        // The trainer, which uses the model states, goes first.
        std::unique_ptr<training::ModelState> state;
        std::unique_ptr<bert::BertTrainer> trainer;
        training::RunSetUp set_up;
        set_up.configure = [&](const training::ConfigView &config) {
          bert::BertTrainOptions &t = cli.train;
          t.config = bert::BertConfig::from_name_or_file(cli.config);
          cli.run.check_global_batch(config, t.batch, job.size());
          cli.run.apply(t);
          t.data_dir = cli.data;
          t.vocab_path =
              cli.vocab.empty() ? default_vocab(cli.data) : std::filesystem::path(cli.vocab);
          t.lr.decay = training::LrDecay::polynomial;
          t.lr.power = cli.power;
          t.lr.max_lr = cli.lr;
          t.lr.min_lr = cli.lr * cli.min_lr_frac;
          t.lr.warmup_steps = cli.warmup ? *cli.warmup : t.steps / 10;
          if (!std::filesystem::is_directory(t.data_dir))
            throw std::runtime_error(fmt::format(
                "--data {}: no such folder; make it with: apps/data/prepare --model bert",
                t.data_dir.string()));
          return trainer_settings(cli, app);
        };
        set_up.layout = [&] { return bert::parameter_layout(cli.train.config); };
        set_up.make_trainer = [&](training::ModelState &s) {
          trainer = std::make_unique<bert::BertTrainer>(cli.train, s, world);
        };
        state = training::set_up_run(job, "zrt-bert", cli.train.batch, cli.train, set_up);
        if (!state) return 1;
        return trainer->run().stopped ? training::kExitStopped : 0;
      });
}
