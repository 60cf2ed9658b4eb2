#include "trainer_main.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>

#include <optional>
#include <stdexcept>

#include "divergence.hpp"
#include "model_state.hpp"
#include "signals.hpp"

namespace training {

AppWorld::AppWorld(const char *program, zrt_context_h context)
    : program_(program), context_(context) {
  zrt_context_comm(context, &comm_);
  zrt_comm_rank(comm_, &rank_);
  zrt_comm_size(comm_, &size_);
}

bool AppWorld::agreed(const std::function<void()> &part) const {
  std::string error;
  try {
    part();
  } catch (const std::exception &e) {
    error = e.what();
  }
  int failed_rank = -1;
  const zrt_status_t st = zrt_comm_agree_status(
      comm_, error.empty() ? ZRT_SUCCESS : ZRT_ERR_INVALID_ARGUMENT, &failed_rank);
  // The agreement itself failed (a rank stopped or died: the ranks are out of step): no
  // rank was named, so each says what it knows, and the job ends (trainer_main aborts).
  if (st != ZRT_SUCCESS && failed_rank < 0)
    throw std::runtime_error(error.empty() ? zrt_last_error_message()
                                           : error + "; then " + zrt_last_error_message());
  // The lowest failing rank speaks; usually every rank failed alike (a bad option).
  if (st != ZRT_SUCCESS && rank_ == failed_rank)
    fmt::print(stderr, "{}: {}{}\n", program_, rank_ > 0 ? fmt::format("rank {}: ", rank_) : "",
               error);
  return st == ZRT_SUCCESS;
}

std::unique_ptr<ModelState> set_up_run(const AppWorld &job, const char *program, int &batch,
                                       RunOptions &options, const RunSetUp &set_up) {
  std::optional<ConfigView> config;
  JobSettings settings;
  std::unique_ptr<ModelState> state;
  const bool ready =
      job.agreed([&] {
        config.emplace(job.context());
        settings = plan_job_settings(*config, set_up.configure(*config));
      }) &&
      // Collective: the engine agrees on its own errors, so every rank gets here.
      job.agreed([&] {
        nlohmann::json resolved;
        state = make_engine_model_state(job.context(), set_up.layout(), settings.engine, &resolved);
        take_resolved(resolved, *config, batch, options.optimizer, options.lr);
        if (job.rank() == 0) print_settings(settings_lines(resolved, *config, settings), program);
      }) &&
      job.agreed([&] { set_up.make_trainer(*state); });
  if (!ready) return nullptr;
  return state;
}

int trainer_main(int argc, char **argv, const char *program, CLI::App &app,
                 const std::function<void()> &before_context, const AppBody &body) {
  // From the first line: a SIGUSR1 or SIGTERM during start-up (a long checkpoint load, say)
  // is kept, and the run stops after its first step with a checkpoint, instead of dying.
  install_stop_signals();
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  install_stop_signals();  // in case MPI's start-up set handlers of its own
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    // Every rank parses the same arguments; one message (or --help) is enough.
    const int code = rank == 0 ? app.exit(e) : e.get_exit_code();
    MPI_Finalize();
    return code;
  }
  // A CUDA build on a node without a usable GPU or driver: said on every rank, before
  // anything collective, and every rank ends (no silent fallback to the host).
  if (const std::string why = cuda_unusable(); !why.empty()) {
    fmt::print(stderr, "{}: rank {}: {}\n", program, rank, why);
    MPI_Finalize();
    return 1;
  }
  int rc = 0;
  {
    before_context();
    zrt_context_h ctx = nullptr;
    if (const zrt_status_t st = zrt_init(MPI_COMM_WORLD, nullptr, &ctx); st != ZRT_SUCCESS) {
      fmt::print(stderr, "{}: rank {}: {}\n", program, rank, zrt_last_error_message());
      // A rank that never came (dead before zrt_init): MPI_Finalize would wait for it.
      if (st == ZRT_ERR_TIMEOUT) MPI_Abort(MPI_COMM_WORLD, 1);
      rc = 1;
    } else {
      // Kokkos starts once zerort knows the rank's GPU (a CUDA build computes there), and
      // ends after zrt_finalize, as before.
      int kokkos_argc = 1;
      const auto kokkos = start_kokkos(ctx, kokkos_argc, argv);
      try {
        rc = body(AppWorld(program, ctx));
      } catch (const TrainingDiverged &e) {
        // Every rank stops at the same step (the skips are agreed): no collective is open.
        if (rank == 0) fmt::print(stderr, "{}: {}\n", program, e.what());
        rc = 1;
      } catch (const std::exception &e) {
        // Another rank may be stopped, dead or inside a collective: only an abort ends the
        // job on every rank (zerort released what it held without waiting for them).
        fmt::print(stderr, "{}: rank {}: {}\n", program, rank, e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      // A failure here means the ranks went out of step (MPI_Finalize would wait for a
      // stopped one for ever).
      if (zrt_finalize(ctx) != ZRT_SUCCESS) {
        fmt::print(stderr, "{}: rank {}: {}\n", program, rank, zrt_last_error_message());
        MPI_Abort(MPI_COMM_WORLD, rc != 0 ? rc : 1);
      }
    }
  }
  MPI_Finalize();
  return rc;
}

}  // namespace training
