#include "comm/collective_request.hpp"

#include <sched.h>

#include "comm/communicator.hpp"
#include "runtime/error.hpp"
#include "runtime/graveyard.hpp"
#include "runtime/watchdog.hpp"

namespace zrt {

Request::Request(Communicator &comm, const CollArgs &args, Backend &backend, int backend_index)
    : comm_(comm),
      args_(args),
      backend_(&backend),
      backend_index_(backend_index),
      posted_at_(Watchdog::now()) {}

Request::Request(Communicator &comm, const CollArgs &args, Orphan)
    : comm_(comm), args_(args), orphan_(true), posted_at_(Watchdog::now()) {}

Request::~Request() = default;

void Request::freed() {
  comm_.request_freed();
}

void Request::fail(zrt_status_t status, std::string message) {
  status_ = status;
  message_ = std::move(message);
  op_.reset();
  set_phase(Phase::Failed);
}

zrt_status_t Request::report() const {
  switch (phase_.load(std::memory_order_acquire)) {
    case Phase::Done:
      return ZRT_SUCCESS;
    case Phase::Failed:
      throw Error(status_, message_);
    default:
      return ZRT_IN_PROGRESS;
  }
}

zrt_status_t Request::test() {
  if (!finished()) comm_.progress();
  return report();
}

zrt_status_t Request::wait() {
  // Spins, yielding every few rounds: the backends need these calls to progress, a peer
  // on another core answers within microseconds, and on an oversubscribed node the yield
  // lets a peer that shares this core run. The communicator's watchdog runs inside
  // progress(), so this loop ends with an error rather than hang when a rank never arrives
  // (comm.timeout).
  constexpr int kSpinsPerYield = 32;
  for (int spins = 0; !finished();) {
    comm_.progress();
    if (!finished() && ++spins == kSpinsPerYield) {
      sched_yield();
      spins = 0;
    }
  }
  return report();
}

void Request::post_check(MPI_Comm check_comm) {
  try {
    check_.post(check_comm, args_, backend_index_, orphan_);
    set_phase(Phase::Checking);
  } catch (const Error &e) {
    fail(e.status(), fmt::format("{}: {}", args_.describe(), e.what()));
  }
}

bool Request::checked() {
  try {
    if (!check_.test()) return false;
  } catch (const Error &e) {
    fail(e.status(), fmt::format("{}: {}", args_.describe(), e.what()));
    return true;
  }
  if (orphan_) {
    fail(ZRT_ERR_INVALID_ARGUMENT, "rejected on this rank");
    return true;
  }
  try {
    check_.verdict(args_, comm_.rank());  // its messages name the collective and the rank
    set_phase(Phase::Ready);
  } catch (const Error &e) {
    fail(e.status(), e.what());
  }
  return true;
}

void Request::start() {
  try {
    op_ = backend_->start(args_);
    set_phase(Phase::Running);
  } catch (const Error &e) {
    fail(e.status(), fmt::format("{}: {}", args_.describe(), e.what()));
  }
}

bool Request::step() {
  try {
    if (!op_->step()) return false;
    op_.reset();
    set_phase(Phase::Done);
  } catch (const Error &e) {
    fail(e.status(), fmt::format("{}: {}", args_.describe(), e.what()));
  }
  return true;
}

void Request::abandon(std::string message) {
  if (phase() == Phase::Checking) check_.abandon();
  if (op_) {
    op_->abandon();
    bury(std::move(op_));
  }
  fail(ZRT_ERR_TIMEOUT, std::move(message));
}

}  // namespace zrt
