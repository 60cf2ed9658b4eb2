#include "optim/param_push.hpp"

#include <cassert>
#include <cstdint>

#include "comm/streaming_copy.hpp"
#include "runtime/agree.hpp"

namespace zrt {

std::unique_ptr<ParamPush> ParamPush::make(Communicator &comm, MPI_Comm control, char *params,
                                           size_t params_bytes, bool eligible) {
  const int n = comm.size(), me = comm.rank();
  CommMemory &memory = comm.memory();
  eligible =
      eligible && n > 1 && params != nullptr && params_bytes > 0 && memory.shared_peers() == n;
  std::pair<uint64_t, uint64_t> place{SharedBuffers::kNone, 0};
  std::vector<char *> peers;
  if (eligible) {
    place = memory.place_of(params, params_bytes);
    // The window's ranks in the communicator's order: this rank's own view is its buffer.
    eligible = memory.peer_view(params, params_bytes, me) == params;
    for (int r = 0; r < n && eligible; ++r) {
      if (r == me) continue;
      char *view = memory.peer_view(params, params_bytes, r);
      eligible = view != nullptr;
      peers.push_back(view);
    }
    eligible = eligible && place.first != SharedBuffers::kNone;
  }
  // Every rank eligible, and the buffers at one place in every part (the minimum of each
  // value and of its complement: equal when they are the same everywhere).
  uint64_t agree[5] = {eligible ? 1u : 0u, place.first, ~place.first, place.second, ~place.second};
  watched_allreduce(control, agree, 5, MPI_UINT64_T, MPI_MIN,
                    "agreement on writing the updated parameters into the peers' buffers");
  const bool same = agree[1] == ~agree[2] && agree[3] == ~agree[4];
  if (agree[0] == 0 || !same) return nullptr;
  return std::unique_ptr<ParamPush>(new ParamPush(params, params_bytes, std::move(peers)));
}

void ParamPush::push(const OptimRange &r) const {
  // Inside the buffer: the engine makes a push only for an optimizer whose every range's
  // weights are in it (OptimizerStep::updates_within). No throw here: this runs on the
  // optimizer's worker threads.
  const char *from = reinterpret_cast<const char *>(r.weights);
  const size_t bytes = r.count * sizeof(float);
  assert(from >= params_ && bytes <= bytes_ &&
         static_cast<size_t>(from - params_) <= bytes_ - bytes);
  const size_t at = static_cast<size_t>(from - params_);
  for (char *peer : peers_)
    copy_streaming(peer + at, from, bytes);
}

void ParamPush::finish(MPI_Comm control, const Layout &layout, zrt_dtype_t dtype,
                       CommStats &stats) const {
  {
    CommStats::Timer timer(stats);
    watched_barrier(control, "barrier after writing the updated parameters to the peers");
  }
  for (const BucketInfo &b : layout.buckets()) {
    CollArgs a;
    a.kind = CollKind::AllGather;
    a.count = b.length;
    a.dtype = dtype;
    stats.posted(a);
  }
}

}  // namespace zrt
