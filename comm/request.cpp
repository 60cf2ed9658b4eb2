#include "comm/request.hpp"

#include <sched.h>

#include "comm/communicator.hpp"
#include "runtime/error.hpp"

namespace zrt {

void Request::fail(zrt_status_t status, std::string message) {
  phase_ = Phase::Failed;
  status_ = status;
  message_ = std::move(message);
  op_.reset();
}

zrt_status_t Request::report() const {
  switch (phase_) {
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
  // Spins with a yield: MPI needs these calls to progress, and on an oversubscribed node
  // the yield lets the peer rank run.
  while (!finished()) {
    comm_.progress();
    if (!finished()) sched_yield();
  }
  return report();
}

}  // namespace zrt
