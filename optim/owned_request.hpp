// A collective the engine owns: freeing it tells the communicator, which counts live
// requests (zrt_finalize refuses while some are in flight).
#pragma once

#include <memory>

#include "comm/communicator.hpp"

namespace zrt {

struct RequestRelease {
  Communicator *comm = nullptr;
  void operator()(Request *r) const {
    delete r;
    if (comm != nullptr) comm->request_freed();
  }
};
using RequestPtr = std::unique_ptr<Request, RequestRelease>;

// Posts args on comm (see Communicator::post). Collective.
inline RequestPtr post_owned(Communicator &comm, const CollArgs &args) {
  return RequestPtr(comm.post(args).release(), RequestRelease{&comm});
}

}  // namespace zrt
