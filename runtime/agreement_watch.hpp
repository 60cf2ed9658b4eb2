// Deadlines for zerort's agreements and the other waits on one MPI communicator that depend
// on every rank (agree_status, run_agreed, the engine's broadcasts of names and shapes).
//
// An agreement is an MPI nonblocking collective that cannot be cancelled, so a rank that is
// stopped, hung in a debugger or dead (under a launcher that does not tear the job down)
// would leave the others waiting for ever. Each watched communicator numbers its
// agreements and runs a Watchdog (runtime/watchdog.hpp) on a duplicate of it: past the
// timeout (comm.timeout), the ranks still waiting ask every rank how far it got and fail
// with ZRT_ERR_TIMEOUT and one verdict that names the operation ("agreement #12 in
// zrt_engine_step"), the ranks that did not arrive and the ranks that did not answer.
// After that every agreement on the communicator fails at once with the same verdict:
// the abandoned collective may still complete some day, so its buffers are buried and the
// owner must give the communicator up (MpiComm::abandon) instead of freeing it.
//
// The owner of the communicator (the context, an engine) creates the watch right after the
// communicator; the waits find it by the MPI_Comm. Waits on a communicator without one
// still yield the core while they wait, and have no deadline unless the thread set one
// (SetupDeadline): zrt_init's first meetings on the caller's communicator, before any
// watch exists, where a rank that died before zrt_init (a crash in MPI's start, say, under
// an srun without --kill-on-bad-exit) would otherwise hold the others for ever.
//
// A watch made with its context's Breakage (runtime/breakage.hpp) marks the context broken
// when it fails or when MPI fails under one of its waits, and fails every wait at once,
// without posting anything, once the context is broken (by any of its watches or
// communicators): ranks out of step must not be waited for again, by anyone.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/breakage.hpp"

namespace zrt {

class Watchdog;

class AgreementWatch {
 public:
  // Collective over comm. timeout in seconds; 0 watches nothing (no deadline). breakage:
  // the context's, or nullptr for a watch that answers for itself only.
  AgreementWatch(MPI_Comm comm, double timeout, std::shared_ptr<Breakage> breakage = nullptr);
  ~AgreementWatch();
  AgreementWatch(const AgreementWatch &) = delete;
  AgreementWatch &operator=(const AgreementWatch &) = delete;

  // The watch of comm, or nullptr.
  static AgreementWatch *find(MPI_Comm comm);

  // Why this communicator's agreements fail, or "" while they work.
  std::string failure() const;
  double timeout() const { return timeout_; }
  const std::shared_ptr<Breakage> &breakage() const { return breakage_; }
  // Whether waits on this communicator may no longer be attempted: the watch failed, or
  // its context is broken.
  bool given_up() const { return !failure().empty() || (breakage_ && breakage_->broken()); }

 private:
  friend void wait_watched(MPI_Comm, MPI_Request *, const char *, const std::function<void()> &,
                           std::unique_ptr<char[]> &);
  friend void check_watched(MPI_Comm, const char *);
  MPI_Comm comm_;
  double timeout_;
  std::unique_ptr<Watchdog> watchdog_;
  std::shared_ptr<Breakage> breakage_;
  mutable std::mutex mutex_;
  uint64_t posted_ = 0;  // agreements this rank has started on comm_
  std::string failure_;
};

// While one lives, this thread's waits on communicators without a watch fail with
// ZRT_ERR_TIMEOUT after timeout seconds (0: no deadline). The ranks that arrived cannot
// name the ones that did not (no channel exists yet to ask them): the message says what
// was waited for and for how long. The ranks are then out of step: the caller must end
// the job with MPI_Abort, as MPI_Finalize would wait for the missing rank.
class SetupDeadline {
 public:
  explicit SetupDeadline(double timeout);
  ~SetupDeadline();
  SetupDeadline(const SetupDeadline &) = delete;
  SetupDeadline &operator=(const SetupDeadline &) = delete;

 private:
  double previous_;
};

// Throws what wait_watched would throw at once (comm's watch failed earlier, or its
// context is broken) without waiting: called before an operation is posted, so that none is
// left in MPI for a communicator its owner may then free. Local.
void check_watched(MPI_Comm comm, const char *what);

// Waits for request, an operation on comm that every rank of comm takes part in, calling
// progress() (if given) between tests and yielding the core. what names it ("agreement
// on status"). Under comm's watch, past its timeout it throws Error(ZRT_ERR_TIMEOUT) with
// the verdict; without one, past this thread's SetupDeadline, if any. buffer (what the
// operation may still write) is then buried, not freed. Throws at once when the watch
// failed earlier.
void wait_watched(MPI_Comm comm, MPI_Request *request, const char *what,
                  const std::function<void()> &progress, std::unique_ptr<char[]> &buffer);

}  // namespace zrt
