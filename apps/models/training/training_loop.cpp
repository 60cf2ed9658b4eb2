#include "training_loop.hpp"

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <utility>

#include "divergence.hpp"
#include "init_from.hpp"
#include "job_metadata.hpp"
#include "model_state.hpp"
#include "rank_sum.hpp"
#include "signals.hpp"

namespace training {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

bool sum_with_stop_flag(const World &world, std::vector<double> &values) {
  values.push_back(double(stop_signal()));
  sum_over_ranks(world.comm, world.size, values);
  const bool stop = values.back() > 0;
  values.pop_back();
  return stop;
}

TrainingLoop::TrainingLoop(const RunOptions &options, TrainerIdentity identity, ModelState &state,
                           const World &world)
    : opt_(options),
      id_(std::move(identity)),
      state_(state),
      world_(world),
      lead_(world.rank == 0 && !options.quiet),
      log_(world.rank == 0 ? options.json_metrics : "") {
  lr_ = options.lr;
  lr_.total_steps = options.steps;
  lr_.validate();
  if (!options.save_path.empty()) check_save_folder(options.save_path);
  if (!options.resume_path.empty())
    resume_.emplace(read_checkpoint_info(options.resume_path, id_.owner));
  // A requeued job's metrics continue its earlier runs' (rank 0 writes them).
  if (resume_) log_.resumed_at(resume_->step);
  init_ = open_init_from(options.init_from, id_.kind, state.store());
}

void TrainingLoop::header(TrainerHooks &hooks) {
  nlohmann::json info = hooks.run_record();
  info["model_states"] = state_.describe();
  info["mem_model_states"] = state_.memory().total();
  info["mem_model_states_stage0"] = state_.stage0_bytes();
  info.update(job_metadata());
  log_.run(info);
  if (!lead_) return;
  hooks.print_header();
  fmt::print("model states: {}\n", state_.describe());
  const StateMemory mem = state_.memory();
  fmt::print(
      "model states per rank: {}\n",
      state_memory_breakdown(mem, state_.stage0_bytes(), optimizer_label(opt_.optimizer.kind)));
  std::fflush(stdout);
}

// Loads the checkpoint; the model moves its data past what the saved run had read.
// Collective.
int64_t TrainingLoop::resume(TrainerHooks &hooks) {
  const CheckpointInfo &r = *resume_;
  state_.load(r.path.string());
  const std::string note = hooks.resumed(r);
  if (lead_) {
    fmt::print("resumed from {} at step {}\n", r.path.string(), r.step);
    if (!note.empty()) fmt::print("{}\n", note);
  }
  return r.step;
}

// Writes a checkpoint after @p step. Collective.
std::filesystem::path TrainingLoop::save(TrainerHooks &hooks, int64_t step, bool background) {
  nlohmann::json meta = hooks.checkpoint_metadata(step);
  meta.update(job_metadata());
  const auto t0 = Clock::now();
  state_.save(opt_.save_path.string(), meta.dump(), background);
  const std::filesystem::path path = checkpoint_path(opt_.save_path, step);
  if (lead_)
    fmt::print("checkpoint: {} (step {}, {:.1f} s{})\n", path.string(), step, seconds_since(t0),
               background ? ", writing in the background" : "");
  std::fflush(stdout);
  return path;
}

RunSummary TrainingLoop::run(TrainerHooks &hooks) {
  header(hooks);
  int64_t step = 0;
  if (resume_)
    step = resume(hooks);
  else if (init_)
    load_init_from(*init_, opt_.init_from, state_.store(), lead_);
  else
    hooks.init_parameters();
  RunSummary result;
  result.first_step = step;
  if (!opt_.dump_logits.empty()) {
    hooks.dump_logits();
    return result;
  }
  install_stop_signals();
  const double tokens_per_step = hooks.tokens_per_step();  // over all ranks
  double time_sum = 0;
  std::optional<double> val_loss;  // the last evaluation's
  DivergenceWatch divergence(opt_.max_skipped_steps);
  while (step < opt_.steps) {
    const auto t0 = Clock::now();
    const std::optional<double> lr = lr_.rate(step);  // none: the engine's scheduler's
    const StepOutcome s = hooks.train_step(step, lr);
    ++step;
    const double dt = seconds_since(t0);
    const int64_t done = step - result.first_step;    // in this run
    if (done > 1 || opt_.steps == 1) time_sum += dt;  // the first step warms caches up

    StepMetrics m;
    m.step = step;
    m.loss = s.loss;
    m.lr = s.report.lr;  // the rate the update ran at, whoever set it
    m.grad_norm = s.report.grad_norm;
    m.seconds = dt;
    m.tokens_per_s = tokens_per_step / dt;
    m.mem_model_states = state_.memory().total();
    m.mem_activations = hooks.activation_bytes();
    hooks.add_memory_metrics(m);
    m.mem_rss = resident_bytes();
    m.extra = s.extra;
    // A CUDA build: what the GPU holds, as the driver counts it (zrt-plan's check compares).
    if (const int64_t used = device_used_bytes(); used >= 0) m.extra["mem_device_used"] = used;
    m.mem_peak_rss = peak_resident_bytes();
    m.comm = s.report.comm;
    // ZeRO-Offload: the copies and the CPU's update, and the part of each the step waited
    // for (1 - exposed / total is the share backward hid).
    if (s.report.offload_copy_seconds > 0 || s.report.offload_cpu_seconds > 0) {
      m.extra["offload_copy_ms"] = s.report.offload_copy_seconds * 1e3;
      m.extra["offload_copy_exposed_ms"] = s.report.offload_copy_exposed_seconds * 1e3;
      m.extra["offload_cpu_ms"] = s.report.offload_cpu_seconds * 1e3;
      m.extra["offload_cpu_exposed_ms"] = s.report.offload_cpu_exposed_seconds * 1e3;
    }
    m.loss_detail = s.loss_detail;
    log_.step(m);
    result.losses.push_back(s.loss);
    // After the first step its own time is the only estimate there is.
    const double per_step = done > 1 ? time_sum / double(done - 1) : dt;
    const double eta = per_step * double(opt_.steps - step);
    if (lead_ && (step % opt_.log_every == 0 || step == opt_.steps || done == 1))
      fmt::print("{}{}\n", progress_line(m, opt_.steps, eta),
                 s.report.applied ? "" : " | update skipped (non-finite gradient)");
    std::fflush(stdout);
    divergence.after_step(s.report, step, s.loss);

    if (s.stop_requested) {
      // Every rank leaves here together, after the same step.
      result.stopped = true;
      result.stop_signal = stop_signal();
      if (lead_)
        fmt::print("stopping after step {}: {}\n", step,
                   result.stop_signal == SIGUSR1   ? "SIGUSR1 received"
                   : result.stop_signal == SIGTERM ? "SIGTERM received"
                                                   : "another rank received a stop signal");
      break;
    }
    if (!opt_.save_path.empty() && opt_.save_every > 0 && step % opt_.save_every == 0 &&
        step < opt_.steps)
      result.checkpoint = save(hooks, step, opt_.save_async);
    if (opt_.eval_every > 0 && step % opt_.eval_every == 0 && step < opt_.steps)
      if (const std::optional<double> v = hooks.evaluate(step)) val_loss = v;
    if (step < opt_.steps) hooks.after_step(step, false);
  }
  result.steps_done = step;
  if (!opt_.save_path.empty()) result.checkpoint = save(hooks, step);
  if (!result.stopped) {  // when preempted, time is short: save and go
    if (const std::optional<double> v = hooks.evaluate(step)) val_loss = v;
    hooks.after_step(step, true);
  }
  result.memory = state_.memory();
  result.stage0_bytes = state_.stage0_bytes();
  if (lead_)
    fmt::print("memory per rank: model states {}, activations {}{}, peak resident {}\n",
               state_memory_summary(result.memory, result.stage0_bytes),
               format_bytes(hooks.activation_bytes()), hooks.activations_note(),
               format_bytes(peak_resident_bytes()));
  if (opt_.plot && world_.rank == 0) {
    try {
      result.plots = write_plots(opt_.plot_dir, id_.short_name,
                                 fmt::format("{} {} on {}", id_.program, id_.model_name,
                                             opt_.data_dir.filename().string()),
                                 log_.steps(), log_.evals());
      if (lead_)
        fmt::print("plots: {} and {}\n", result.plots.loss_png.string(),
                   result.plots.memory_png.string());
    } catch (const std::exception &e) {
      fmt::print(stderr, "{}: {}\n", id_.program, e.what());  // the run itself succeeded
    }
  }
  // null, not 0.0, for what this run never measured.
  nlohmann::json end = {
      {"steps", step},
      {"reason", result.stopped ? "signal" : "done"},
      {"final_loss",
       result.losses.empty() ? nlohmann::json(nullptr) : nlohmann::json(result.losses.back())},
      {"val_loss", val_loss ? nlohmann::json(*val_loss) : nlohmann::json(nullptr)}};
  hooks.add_end_record(end);
  log_.end(end);
  return result;
}

}  // namespace training
