// zrt-gpt2: trains GPT-2 (Kokkos, KokkosKernels' gemm) on zerort's ZeRO engine.
//
//   mpirun -np 2 zrt-gpt2 --config d2 --steps 200 --zero-stage 2 --data apps/data/cache/moby-dick
//   zrt-gpt2 --help
//
// Checkpoints are zerort's (zerort/checkpoint.h): --save writes one at the end, every
// --save-every steps and on SIGUSR1/SIGTERM (Slurm's warning before a time limit or a
// preemption), after which the program exits with status 75 (EX_TEMPFAIL: "requeue me");
// --resume continues from one. --offload-activations keeps all blocks' activations but the
// last two's in pinned host memory through zerort's activation offload (zerort/memory.h).
#include <dlfcn.h>
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
#include "train/trainer.hpp"
#include "train/training_types.hpp"
#include "training/cli_checks.hpp"
#include "training/engine_cli.hpp"
#include "training/job_settings.hpp"
#include "training/run_cli.hpp"
#include "training/trainer_main.hpp"

namespace {

struct Cli {
  gpt2::TrainOptions train;
  std::string config = "d2";
  std::optional<int> n_layer, n_head, n_embd, vocab_size, n_positions;
  training::EngineCli engine;  // --zero-stage, --dtype, --deterministic, --device, --bucket-mb
  std::string data = (gpt2::data_root() / "moby-dick").string();
  std::string data_format = "auto";
  std::string tokenizer;
  std::optional<double> lr;
  double min_lr_frac = 0.1;
  training::RunCli run;  // --steps, --grad-accum, --save, --resume, ... (the loop's)
};

void add_options(CLI::App &app, Cli &c) {
  gpt2::TrainOptions &t = c.train;
  app.add_option("--config", c.config,
                 "model: gpt2 (124M), gpt2-medium, gpt2-large, gpt2-xl, dN (N layers of 64N "
                 "channels: d2, d6, d12), or a JSON file (n_layer, n_head, n_embd, vocab_size, "
                 "n_positions; \"base\": NAME)")
      ->capture_default_str();
  c.engine.add_to(app, "optimizer (default adamw, GPT-2's)");
  c.run.add_to(app, t, "gpt2");
  app.add_option("--n-layer", c.n_layer, "override the number of layers");
  app.add_option("--n-head", c.n_head, "override the number of heads");
  app.add_option("--n-embd", c.n_embd, "override the channels");
  app.add_option("--vocab-size", c.vocab_size, "override the vocabulary size");
  app.add_option("--n-positions", c.n_positions, "override the context length");
  app.add_option("--batch", t.batch, "sequences per micro-step and rank")
      ->check(training::kPositive)
      ->capture_default_str();
  app.add_option("--seq", t.seq, "tokens per sequence")
      ->check(training::kPositive)
      ->capture_default_str();
  app.add_option("--lr", c.lr,
                 "peak learning rate (default by width, as GPT-3: 6e-4 for 768 channels, 1e-3 "
                 "up to 512, 3e-3 up to 256)")
      ->check(training::kPositive);
  app.add_option("--min-lr-frac", c.min_lr_frac, "final learning rate, as a share of --lr")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--warmup", t.lr.warmup_steps, "linear warmup steps")
      ->check(training::kNonNegative)
      ->capture_default_str();
  app.add_option("--weight-decay", t.optimizer.weight_decay, "weight decay")
      ->check(training::kNonNegative)
      ->capture_default_str();
  app.add_flag("--recompute", t.recompute, "recompute activations in backward (less memory)");
  app.add_flag("--offload-activations", t.offload_activations,
               "keep the blocks' activations in host memory from forward to backward through "
               "zerort's activation offload (two blocks' worth stay resident; not with "
               "--recompute)");
  app.add_option("--data", c.data, "folder with train.bin and val.bin (apps/data/prepare)")
      ->capture_default_str();
  app.add_option("--data-format", c.data_format, "token files: auto, llmc or raw (nanoGPT)")
      ->check(CLI::IsMember({"auto", "llmc", "raw"}))
      ->capture_default_str();
  app.add_option("--tokenizer", c.tokenizer,
                 "folder with encoder.json and vocab.bpe, to print samples as text "
                 "(default: DATA/../tokenizer)");
  app.add_option("--eval-batches", t.eval_batches, "batches per validation")
      ->check(training::kPositive)
      ->capture_default_str();
  app.add_option("--sample-every", t.sample_every,
                 "text sample every N steps; 0 = at the end only; -1 = never")
      ->capture_default_str();
  app.add_option("--sample-tokens", t.sample.tokens, "tokens per sample")
      ->check(training::kPositive)
      ->capture_default_str();
  app.add_option("--temperature", t.sample.temperature, "sampling temperature; 0 = greedy")
      ->check(training::kNonNegative)
      ->capture_default_str();
  app.add_option("--top-k", t.sample.top_k, "sample among the k most likely tokens; 0 = all")
      ->check(training::kNonNegative)
      ->capture_default_str();
  app.add_option("--dump-logits", c.train.dump_logits,
                 "write the logits of one validation batch (--batch x --seq) to this file "
                 "(float32) and its token ids to FILE.json, and stop without training");
}

gpt2::Gpt2Config model_config(const Cli &c) {
  gpt2::Gpt2Config cfg = gpt2::Gpt2Config::from_name_or_file(c.config);
  if (c.n_layer) cfg.num_layers = *c.n_layer;
  if (c.n_head) cfg.num_heads = *c.n_head;
  if (c.n_embd) cfg.channels = *c.n_embd;
  if (c.vocab_size) cfg.vocab_size = *c.vocab_size;
  if (c.n_positions) cfg.max_seq_len = *c.n_positions;
  cfg.validate();
  return cfg;
}

// Smaller models train stably at larger rates (GPT-3's table: 6e-4 at 125M, down to 2e-4
// at 1.3B); tiny ones take more still.
double default_lr(const gpt2::Gpt2Config &cfg) {
  if (cfg.channels <= 256) return 3e-3;
  if (cfg.channels <= 512) return 1e-3;
  if (cfg.channels <= 768) return 6e-4;
  if (cfg.channels <= 1024) return 3e-4;
  return 2e-4;
}

// OpenBLAS picks its kernels from the CPU model; on virtual machines that report a generic
// CPU it falls back to its SSE3 ones (Prescott), leaving AVX2/AVX-512 unused. Say so.
void check_blas(bool print) {
  using CoreName = char *(*)();
  auto corename = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (!corename || !print) return;
  const std::string core = corename();
  if ((core == "Prescott" || core == "Core2" || core == "Nehalem") &&
      __builtin_cpu_supports("avx2"))
    fmt::print(stderr,
               "zrt-gpt2: note: OpenBLAS did not recognize this CPU and uses its {} (SSE) "
               "kernels; OPENBLAS_CORETYPE={} selects the ones for its {}\n",
               core, __builtin_cpu_supports("avx512f") ? "SkylakeX" : "Haswell",
               __builtin_cpu_supports("avx512f") ? "AVX-512" : "AVX2");
}

// The engine settings of the command line, with zrt-gpt2's defaults.
training::TrainerSettings trainer_settings(const Cli &c, const CLI::App &app) {
  const gpt2::TrainOptions &t = c.train;
  auto given = [&](const char *option) { return app.count(option) > 0; };
  training::TrainerSettings s;
  s.program = "zrt-gpt2";
  c.engine.fill(s, app);
  s.lr = {t.lr.max_lr, c.lr.has_value()};
  training::EngineCli::fill_training(s, t.optimizer, t.batch, t.steps, app);
  s.global_batch = c.run.global_batch;
  s.hidden = t.config.channels;
  s.warmup = t.lr.warmup_steps;
  for (const char *option : {"--warmup", "--min-lr-frac"})
    if (given(option)) s.schedule_options.push_back(option);
  return s;
}

}  // namespace

int main(int argc, char **argv) {
  Cli cli;
  CLI::App app{"zrt-gpt2: train GPT-2 (Kokkos) on zerort"};
  add_options(app, cli);
  auto before_context = [&] { cli.engine.before_context(); };
  return training::trainer_main(
      argc, argv, "zrt-gpt2", app, before_context, [&](const training::AppWorld &job) {
        gpt2::World world{job.rank(), job.size(), job.comm(), job.context()};
        // Set up everything that can fail on bad input, agreeing across ranks after each part;
        // the trainer, which uses the model states, goes first.
        std::unique_ptr<training::ModelState> state;
        std::unique_ptr<gpt2::Trainer> trainer;
        training::RunSetUp set_up;
        set_up.configure = [&](const training::ConfigView &config) {
          cli.train.config = model_config(cli);
          cli.run.check_global_batch(config, cli.train.batch, job.size());
          cli.run.apply(cli.train);
          cli.train.data_dir = cli.data;
          cli.train.data_format = gpt2::parse_token_format(cli.data_format);
          cli.train.tokenizer_dir =
              cli.tokenizer.empty() ? std::filesystem::path(cli.data).parent_path() / "tokenizer"
                                    : std::filesystem::path(cli.tokenizer);
          cli.train.lr.max_lr = cli.lr ? *cli.lr : default_lr(cli.train.config);
          cli.train.lr.min_lr = cli.train.lr.max_lr * cli.min_lr_frac;
          check_blas(job.rank() == 0);
          return trainer_settings(cli, app);
        };
        set_up.layout = [&] { return gpt2::parameter_layout(cli.train.config); };
        set_up.make_trainer = [&](training::ModelState &state) {
          trainer = std::make_unique<gpt2::Trainer>(cli.train, state, world);
        };
        state = training::set_up_run(job, "zrt-gpt2", cli.train.batch, cli.train, set_up);
        if (!state) return 1;
        // Stopped by a signal (a time limit or a preemption coming): "try again later".
        return trainer->run().stopped ? training::kExitStopped : 0;
      });
}
