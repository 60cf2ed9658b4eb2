#include "runtime/agreement_watch.hpp"

#include <fmt/format.h>

#include <map>
#include <thread>

#include "runtime/error.hpp"
#include "runtime/graveyard.hpp"
#include "runtime/log.hpp"
#include "runtime/mpi_error.hpp"
#include "runtime/watchdog.hpp"

namespace zrt {

namespace {

struct Watches {
  std::mutex mutex;
  std::map<MPI_Comm, AgreementWatch *> by_comm;
};

// SetupDeadline's timeout for this thread; 0 while none is set.
thread_local double t_setup_deadline = 0;

Watches &watches() {
  static Watches *w = new Watches;  // never destroyed: used until the last owner goes
  return *w;
}

// A wait first spins (an agreement usually completes within microseconds of the last
// rank's arrival), then naps with a growing pause, so a rank waiting for a slow peer
// leaves the core to it (ranks are often oversubscribed on a node).
void pause_after(double waited) {
  if (waited < 1e-3) {
    std::this_thread::yield();
    return;
  }
  const double nap = waited < 0.1 ? 20e-6 : waited < 1.0 ? 200e-6 : 1e-3;
  std::this_thread::sleep_for(std::chrono::duration<double>(nap));
}

}  // namespace

SetupDeadline::SetupDeadline(double timeout) : previous_(t_setup_deadline) {
  t_setup_deadline = timeout;
}

SetupDeadline::~SetupDeadline() {
  t_setup_deadline = previous_;
}

AgreementWatch::AgreementWatch(MPI_Comm comm, double timeout, std::shared_ptr<Breakage> breakage)
    : comm_(comm), timeout_(timeout), breakage_(std::move(breakage)) {
  if (timeout_ > 0) watchdog_ = std::make_unique<Watchdog>(comm, timeout_, "agreement");
  std::lock_guard lock(watches().mutex);
  watches().by_comm[comm_] = this;
}

AgreementWatch::~AgreementWatch() {
  {
    std::lock_guard lock(watches().mutex);
    auto it = watches().by_comm.find(comm_);
    if (it != watches().by_comm.end() && it->second == this) watches().by_comm.erase(it);
  }
  // A failed watch's duplicate may carry messages in flight to ranks that are gone, and
  // its destructor would give them a second to arrive: neither is waited for.
  if (given_up()) bury(std::move(watchdog_));
}

AgreementWatch *AgreementWatch::find(MPI_Comm comm) {
  std::lock_guard lock(watches().mutex);
  auto it = watches().by_comm.find(comm);
  return it == watches().by_comm.end() ? nullptr : it->second;
}

std::string AgreementWatch::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void check_watched(MPI_Comm comm, const char *what) {
  AgreementWatch *watch = AgreementWatch::find(comm);
  if (watch == nullptr) return;
  std::lock_guard lock(watch->mutex_);
  if (!watch->failure_.empty())
    fail(ZRT_ERR_TIMEOUT, "{} not attempted: this communicator's agreements failed earlier: {}",
         what, watch->failure_);
  if (watch->breakage_) watch->breakage_->check(what);
}

void wait_watched(MPI_Comm comm, MPI_Request *request, const char *what,
                  const std::function<void()> &progress, std::unique_ptr<char[]> &buffer) {
  AgreementWatch *watch = AgreementWatch::find(comm);
  Watchdog::Oldest oldest;
  if (watch != nullptr) {
    std::lock_guard lock(watch->mutex_);
    if (!watch->failure_.empty()) {
      bury(std::move(buffer));
      fail(ZRT_ERR_TIMEOUT, "{} not attempted: this communicator's agreements failed earlier: {}",
           what, watch->failure_);
    }
    if (watch->breakage_ && watch->breakage_->broken()) {
      // The request was posted, but some rank may never take part: MPI keeps it.
      *request = MPI_REQUEST_NULL;
      bury(std::move(buffer));
      watch->breakage_->check(what);
    }
    oldest.seq = watch->posted_++;
    const char *function = current_function();
    oldest.what = fmt::format("{} #{}{}{}", what, oldest.seq, *function ? " in " : "", function);
  }
  const double start = Watchdog::now();
  const double unwatched_limit = watch == nullptr ? t_setup_deadline : 0;
  oldest.posted_at = start;
  double last_watch = start;
  for (;;) {
    int done = 0;
    const int rc = MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS && watch != nullptr && watch->breakage_) {
      // A peer may still be inside this collective, waiting for us: out of step.
      watch->breakage_->mark(ZRT_ERR_MPI,
                             fmt::format("{} failed in MPI: {}", what, mpi_error_string(rc)));
    }
    check_mpi(rc, what);
    if (done) return;
    if (progress) progress();
    const double now = Watchdog::now();
    if (unwatched_limit > 0 && now - start >= unwatched_limit) {
      bury(std::move(buffer));
      *request = MPI_REQUEST_NULL;  // MPI keeps the operation; it is never waited on again
      const std::string message = fmt::format(
          "{} did not complete within {:g} s (comm.timeout): a rank of the communicator did "
          "not arrive (one that died or stopped before this call: the launcher's log names "
          "it); the ranks are out of step",
          what, unwatched_limit);
      log::error("{}", message);
      throw Error(ZRT_ERR_TIMEOUT, message);
    }
    if (watch != nullptr && watch->watchdog_ && now - last_watch >= 1e-3) {
      last_watch = now;
      std::lock_guard lock(watch->mutex_);
      std::optional<WatchVerdict> verdict =
          watch->watchdog_->poll(now, &oldest, watch->posted_, "mpi");
      if (verdict) {
        watch->failure_ = verdict->message;
        if (watch->breakage_) watch->breakage_->mark(ZRT_ERR_TIMEOUT, verdict->message);
        log::error("{}", verdict->message);
        bury(std::move(buffer));
        *request = MPI_REQUEST_NULL;  // MPI keeps the collective; we never wait on it again
        throw Error(ZRT_ERR_TIMEOUT, verdict->message);
      }
    }
    pause_after(now - start);
  }
}

}  // namespace zrt
