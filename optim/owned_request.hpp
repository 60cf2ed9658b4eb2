// A collective the engine owns: freeing it tells the communicator, which counts live
// requests (zrt_finalize refuses while some are in flight); waiting on it is timed into the
// engine's CommStats, so the step report can say how much of a step was exposed
// communication.
#pragma once

#include <memory>

#include "comm/communicator.hpp"
#include "optim/comm_stats.hpp"

namespace zrt {

struct RequestRelease {
  Communicator *comm = nullptr;
  void operator()(Request *r) const {
    delete r;
    if (comm != nullptr) comm->request_freed();
  }
};

class OwnedRequest {
 public:
  OwnedRequest() = default;
  // Posts args on comm (see Communicator::post) and counts its bytes in stats. Collective.
  OwnedRequest(Communicator &comm, const CollArgs &args, CommStats &stats)
      : request_(comm.post(args).release(), RequestRelease{&comm}), stats_(&stats) {
    stats.posted(args);
  }
  // Blocks until the collective completes (Request::wait); the time blocked is the
  // engine's exposed communication.
  zrt_status_t wait() {
    CommStats::Timer timer(*stats_);
    return request_->wait();
  }
  // Whether it has completed, without blocking (drives the communicator's progress);
  // throws its failure as wait() reports it.
  bool test() { return request_->test() == ZRT_SUCCESS; }

 private:
  std::unique_ptr<Request, RequestRelease> request_;
  CommStats *stats_ = nullptr;
};

inline OwnedRequest post_owned(Communicator &comm, const CollArgs &args, CommStats &stats) {
  return OwnedRequest(comm, args, stats);
}

}  // namespace zrt
