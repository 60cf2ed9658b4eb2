// The frame of a trainer program's main() (zrt-gpt2, zrt-bert): stop signals from the first
// line, MPI, the options, Kokkos, zerort's context, set-up agreed across ranks (set_up_run),
// the run, and the exit status a batch script acts on.
#pragma once

#include <zerort/zerort.h>
#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <zerort/nn/tensor_spec.hpp>
#include "config_view.hpp"
#include "job_settings.hpp"
#include "model_state.hpp"
#include "training_loop.hpp"

namespace training {

/// Exit status of a run stopped by SIGUSR1/SIGTERM with its checkpoint written: EX_TEMPFAIL,
/// "try again later", so a batch script requeues the job, which then resumes.
constexpr int kExitStopped = 75;

/// The job as the program's body sees it.
class AppWorld {
 public:
  AppWorld(const char *program, zrt_context_h context);
  zrt_context_h context() const { return context_; }
  zrt_comm_h comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Runs @p part, which may throw on bad input, and agrees across the ranks whether every
  /// rank succeeded: a problem on one rank (a file missing on one node) stops every rank,
  /// and the lowest failing rank prints "PROGRAM: [rank N: ]message". Collective.
  bool agreed(const std::function<void()> &part) const;

 private:
  const char *program_;
  zrt_context_h context_;
  zrt_comm_h comm_ = nullptr;
  int rank_ = 0, size_ = 1;
};

/// What a program gives set_up_run: its part of the set-up, between the engine's.
struct RunSetUp {
  /// The model and the run's options from the command line and @p config (the file's and
  /// the environment's settings); throws on bad input. Returns the engine settings the
  /// command line asks for (job_settings.hpp).
  std::function<TrainerSettings(const ConfigView &config)> configure;
  /// The model's tensors, registered with the engine (called after configure).
  std::function<std::vector<zrt::nn::TensorSpec>()> layout;
  /// The trainer over the model states; throws on bad input.
  std::function<void(ModelState &state)> make_trainer;
};

/// The set-up both programs make, in three parts, each agreed across the ranks
/// (AppWorld::agreed: a rank that fails says why): @p set_up.configure and the settings
/// planned from it; the engine's model states for the layout, whose resolved settings
/// (micro batch, accumulation, optimizer, the file's schedule) go back into @p batch and
/// @p options, and which rank 0 prints; @p set_up.make_trainer. Returns the model states,
/// or null when a part failed. Collective.
std::unique_ptr<ModelState> set_up_run(const AppWorld &job, const char *program, int &batch,
                                       RunOptions &options, const RunSetUp &set_up);

/// The body of main(): sets up (through AppWorld::agreed), trains, and returns the exit
/// status (kExitStopped after a stop signal). A TrainingDiverged it throws ends the run with
/// status 1 and rank 0's message; any other exception is printed with its rank and aborts
/// the job, since other ranks may wait in a collective.
using AppBody = std::function<int(const AppWorld &)>;

/// Installs the stop signals, initializes MPI (MPI_THREAD_MULTIPLE), parses @p app on every
/// rank (rank 0 prints help and errors), refuses a CUDA build on a node where CUDA cannot
/// run (kokkos_device.hpp: every rank says why and returns 1), calls @p before_context (to
/// set zerort's environment from the options, e.g. the emulated device), creates zerort's
/// context over MPI_COMM_WORLD, initializes Kokkos (on the rank's GPU in a CUDA build; its
/// other settings from its environment, the options being the program's), runs @p body,
/// and finalizes in reverse. Returns the exit status.
int trainer_main(int argc, char **argv, const char *program, CLI::App &app,
                 const std::function<void()> &before_context, const AppBody &body);

}  // namespace training
