// The ucx backend: collectives on UCP tagged messages between the ranks' own workers
// (UcxWorker), pipelined in chunks and driven by the progress engine: every step() lets
// UCX progress, reaps finished transfers, and posts the next ones within a window.
//
// reduce-scatter: the ring. In step t = 0 .. n-2 rank r sends the partial sum of block
//   (r - t - 1) mod n to rank r + 1 and receives block (r - t - 2) mod n from rank r - 1,
//   adding its own contribution; after n - 1 steps it holds its own block, reduced. Each
//   block moves in chunks, and a chunk is forwarded as soon as it is reduced, so the steps
//   overlap. Traffic per rank: (n-1)/n of the buffer, the optimum.
// all-gather: the ring, receiving straight into the output and forwarding from there.
// all-reduce: the reduce-scatter into the output's own block, then the all-gather in place.
// broadcast: a chain from the root, pipelined in chunks.
// deterministic mode: each rank sends every other rank its piece of that rank's block
//   directly and sums the n pieces in rank order (ordered_sum); the same traffic as the
//   ring, bitwise equal to every other backend.
#pragma once

#include <memory>

#include "comm/backend.hpp"

namespace zrt {

// Collective over group.comm; throws Error(ZRT_ERR_BACKEND) when UCX cannot start (the
// registry then falls back to mpi with a warning).
std::unique_ptr<Backend> make_ucx_backend(const BackendGroup &group);

}  // namespace zrt
