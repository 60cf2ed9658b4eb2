// The hierarchical backend: collectives in two levels, shared memory inside each node and
// a network backend (ucx or mpi, comm.hier.inter) between nodes, the idea of ZeRO++'s hpZ
// and of HSDP. Every node must hold the same number L of ranks; local rank l of every
// node forms "rail" l (N ranks, one per node).
//
// reduce-scatter: inside each node, a shm reduce-scatter gives local rank l the node's
//   partial sums of the N shards that belong to the ranks of rail l (a strided layout the
//   shm phases take as pieces, no copy); then a reduce-scatter along rail l gives each
//   rank its own shard. Network traffic per rank: (N-1)/N of 1/L of the buffer.
// all-gather: the reverse - along the rail, then inside the node.
// all-reduce: shm reduce-scatter, all-reduce along the rail, shm all-gather.
// broadcast: along the root's rail, then inside each node from that rail's rank.
// deterministic mode: the rank-order sum cannot be split into node partials (fp32 addition
//   does not associate), so reductions run flat over all ranks on the network backend's
//   deterministic algorithm; gathers stay hierarchical (they only copy).
#pragma once

#include <memory>

#include "comm/backend.hpp"

namespace zrt {

// Collective over group.comm. Throws Error(ZRT_ERR_NOT_SUPPORTED) when nodes hold
// different numbers of ranks.
std::unique_ptr<Backend> make_hier_backend(const BackendGroup &group);

}  // namespace zrt
