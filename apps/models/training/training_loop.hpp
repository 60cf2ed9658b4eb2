// The training loop both trainers run (zrt-gpt2's and zrt-bert's): parameters initialized,
// loaded from a checkpoint or from --init-from weights; then per optimizer step the model's
// micro-steps, the metrics line and record, the divergence watch, a clean stop on
// SIGUSR1/SIGTERM agreed across ranks, --save-every checkpoints and evaluations; at the end
// the last checkpoint, evaluation, memory line, plots and the "end" record.
//
// What differs between the models is theirs to say, through TrainerHooks: the data, the
// forward and backward of a step (with its losses and their reduction), the evaluation,
// GPT-2's text samples, the header lines, the checkpoint's metadata. The loop calls them in
// a fixed order, so that a model's step sees the engine calls and random draws it always saw.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint_info.hpp"
#include "lr_schedule.hpp"
#include "metrics.hpp"
#include "model_state.hpp"
#include "plot.hpp"
#include "weights_init.hpp"
#include "world.hpp"

namespace training {

/// The options of a run that the loop itself acts on; each trainer's options extend them.
struct RunOptions {
  std::filesystem::path data_dir;  // train.bin (and val.bin) of the model's data
  int64_t steps = 100;             // optimizer steps
  LrSchedule lr;                   // total_steps is taken from steps
  OptimizerConfig optimizer;
  uint64_t seed = 1337;     // initialization
  int64_t eval_every = 50;  // and at the end; 0 = only at the end
  std::filesystem::path json_metrics;
  bool plot = false;
  std::filesystem::path plot_dir = ".";
  int64_t log_every = 1;
  // Consecutive updates skipped for a non-finite gradient (the engine's check, agreed
  // across ranks) after which the run stops as diverged (TrainingDiverged); 0: never.
  int64_t max_skipped_steps = 10;
  bool quiet = false;  // no progress lines (tests)
  // Checkpoints (zerort's HDF5, checkpoint_info.hpp): written at the end, every save_every
  // steps, and when a stop signal arrives; "{step}" in the path becomes the step.
  std::filesystem::path save_path;
  int64_t save_every = 0;             // 0: only at the end (or on a signal)
  bool save_async = false;            // --save-every saves write in the background
  std::filesystem::path resume_path;  // continue from this checkpoint
  std::filesystem::path init_from;    // weights only, fresh optimizer state (--init-from)
  std::filesystem::path dump_logits;  // write one batch's outputs and stop (--dump-logits)
};

/// Who is training: the program's name for messages and checkpoints, the prefix of its plots,
/// and the model its checkpoints and --init-from files must hold.
struct TrainerIdentity {
  std::string program;     // "zrt-gpt2"
  std::string short_name;  // "gpt2": plots gpt2_loss.png, gpt2_memory.png
  std::string model_name;  // the configuration's name, for the plots' title
  CheckpointOwner owner;
  weights::ModelKind kind;
};

/// One optimizer step as the model ran it.
struct StepOutcome {
  double loss = 0;              // over the global batch (every rank the same)
  StepReport report;            // the last micro-step's, with comm the whole step's
  bool stop_requested = false;  // some rank received a stop signal (agreed in the step)
  nlohmann::json extra = nlohmann::json::object();  // StepMetrics::extra
  std::string loss_detail;                          // StepMetrics::loss_detail
};

/// What a run did, for the trainers' results.
struct RunSummary {
  std::vector<double> losses;  // of each step of this run, over the ranks
  int64_t first_step = 0;      // steps already done when the run began (a resumed run)
  int64_t steps_done = 0;
  bool stopped = false;              // ended early by SIGUSR1/SIGTERM (on any rank)
  int stop_signal = 0;               // the signal this rank received, or 0
  StateMemory memory;                // this rank's model states at the end
  int64_t stage0_bytes = 0;          // what stage 0 would hold instead
  std::filesystem::path checkpoint;  // the last one written, if any
  PlotFiles plots;
};

/// What a model's trainer gives the loop. Every call is made on every rank, in the order
/// the loop's comment gives; "collective" ones must make the same collectives on each.
class TrainerHooks {
 public:
  virtual ~TrainerHooks() = default;
  /// The "run" record's model and data fields (the loop adds the model states' and the job's).
  virtual nlohmann::json run_record() = 0;
  /// The header lines about the model, data and batch (lead rank only); the loop then
  /// prints the model states'.
  virtual void print_header() = 0;
  /// Fresh parameters from the seed. Local.
  virtual void init_parameters() = 0;
  /// After @p resumed's checkpoint was loaded: moves the data past what it had read.
  /// Returns a note for the lead rank to print after "resumed from", or "".
  virtual std::string resumed(const CheckpointInfo &resumed) = 0;
  /// --dump-logits: writes the model's outputs for one batch. Collective.
  virtual void dump_logits() = 0;
  /// Tokens of one optimizer step over all ranks, for tokens/s. Local.
  virtual double tokens_per_step() const = 0;
  /// Optimizer step @p step (0-based) at @p lr (none: the engine's scheduler's): the
  /// micro-steps, each forward, backward and ModelState::step, and one reduction of the
  /// losses with the stop flag (sum_with_stop_flag). Collective.
  virtual StepOutcome train_step(int64_t step, std::optional<double> lr) = 0;
  /// The model's memory figures of a step's metrics beside the loop's (GPT-2's sampling and
  /// offloaded activations). Local.
  virtual void add_memory_metrics(StepMetrics &) {}
  /// Activations resident on this rank, in bytes. Local.
  virtual int64_t activation_bytes() const = 0;
  /// " (+ 12 MiB offloaded ...)": what the end's memory line adds after the activations.
  virtual std::string activations_note() const { return ""; }
  /// The held-out loss after @p step, recorded and printed; none without held-out data.
  /// Collective.
  virtual std::optional<double> evaluate(int64_t step) = 0;
  /// After step @p step's checkpoint and evaluation, for what the model shows now and then
  /// (GPT-2's text samples): after every step but the last, and with @p last once at the
  /// end (not after a stop signal). Collective.
  virtual void after_step(int64_t /*step*/, bool /*last*/) {}
  /// The checkpoint's metadata after @p step (the loop adds the job's).
  virtual nlohmann::json checkpoint_metadata(int64_t step) = 0;
  /// The "end" record's fields beside steps, reason, final_loss and val_loss.
  virtual void add_end_record(nlohmann::json &) {}
};

/// The loop over one model's hooks. Constructed after the model's own checks, it checks
/// the schedule, the checkpoint folder, the checkpoint to resume from and the --init-from
/// file (throws on bad input, before anything collective). Not thread-safe.
class TrainingLoop {
 public:
  TrainingLoop(const RunOptions &options, TrainerIdentity identity, ModelState &state,
               const World &world);

  /// Initializes the parameters (or loads the checkpoint), trains, and returns what the run
  /// did. Collective over the world.
  RunSummary run(TrainerHooks &hooks);

  /// The metrics file (rank 0 writes it), for the hooks' records.
  MetricsLog &log() { return log_; }
  /// The schedule the run follows (total_steps set).
  const LrSchedule &lr() const { return lr_; }
  /// Whether this rank prints (rank 0, not quiet).
  bool lead() const { return lead_; }

 private:
  int64_t resume(TrainerHooks &hooks);
  std::filesystem::path save(TrainerHooks &hooks, int64_t step, bool background = false);
  void header(TrainerHooks &hooks);

  const RunOptions &opt_;
  TrainerIdentity id_;
  ModelState &state_;
  const World &world_;
  const bool lead_;
  MetricsLog log_;
  LrSchedule lr_;
  std::optional<CheckpointInfo> resume_;
  std::optional<weights::WeightsInit> init_;
};

/// Appends this rank's stop flag to @p values (the last element), sums them over the ranks
/// in one reduction and takes it off again: true when any rank was asked to stop.
/// Collective.
bool sum_with_stop_flag(const World &world, std::vector<double> &values);

}  // namespace training
