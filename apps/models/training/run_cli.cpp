#include "run_cli.hpp"

#include <fmt/format.h>

#include "cli_checks.hpp"
#include "global_batch.hpp"
#include "init_from.hpp"
#include "job_settings.hpp"

namespace training {

void RunCli::add_to(CLI::App &app, RunOptions &t, const std::string &short_name) {
  app.add_option("--steps", t.steps, "optimizer steps")->check(kPositive)->capture_default_str();
  CLI::Option *grad_accum = app.add_option("--grad-accum", t.optimizer.accumulation_steps,
                                           "micro-steps per optimizer step")
                                ->check(kPositive)
                                ->capture_default_str();
  add_global_batch_option(app, global_batch, grad_accum);
  app.add_option("--beta1", t.optimizer.beta1, "Adam and LAMB beta1")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--beta2", t.optimizer.beta2, "Adam and LAMB beta2")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--eps", t.optimizer.eps, "Adam and LAMB epsilon")
      ->check(kPositive)
      ->capture_default_str();
  app.add_option("--grad-clip", t.optimizer.grad_clip, "clip the global gradient norm; 0 = off")
      ->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--seed", t.seed, "initialization seed")->capture_default_str();
  app.add_option("--eval-every", t.eval_every,
                 "held-out loss (val.bin) every N steps (and at the end)")
      ->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--json-metrics", t.json_metrics, "write metrics as JSON lines to this file");
  app.add_flag("--plot", t.plot, "draw the loss and memory curves as PNG (gnuplot)");
  app.add_option(
         "--plot-dir", t.plot_dir,
         fmt::format("where --plot writes {}_loss.png, {}_memory.png", short_name, short_name))
      ->capture_default_str();
  app.add_option("--log-every", t.log_every, "progress line every N steps")
      ->check(kPositive)
      ->capture_default_str();
  app.add_option("--max-skipped-steps", t.max_skipped_steps,
                 "stop (exit 1) after N updates in a row skipped for a NaN or Inf gradient; 0: "
                 "never")
      ->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--save", save,
                 "checkpoint file to write (zerort HDF5) at the end, every --save-every steps, "
                 "and on SIGUSR1/SIGTERM; {step} in the name becomes the step");
  app.add_option("--save-every", t.save_every, "steps between checkpoints (0: at the end)")
      ->check(kNonNegative)
      ->capture_default_str();
  app.add_flag("--save-async", t.save_async,
               "--save-every checkpoints copy the state and write in the background while "
               "training goes on (the last and a signal's are written at once)");
  add_start_options(app, resume, init_from);
}

void RunCli::check_global_batch(const ConfigView &config, int batch, int ranks) const {
  if (global_batch && !file_sets_batch(config))
    accumulation_for_global_batch(*global_batch, batch, ranks);
}

void RunCli::apply(RunOptions &t) const {
  t.save_path = save;
  t.resume_path = resume;
  t.init_from = init_from;
}

}  // namespace training
