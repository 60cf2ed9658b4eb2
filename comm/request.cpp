#include "comm/request.hpp"

#include <sched.h>

#include "comm/communicator.hpp"
#include "runtime/error.hpp"

namespace zrt {

Request::~Request() = default;

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

}  // namespace zrt
