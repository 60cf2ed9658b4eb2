// How the ranks of a communicator spread over nodes, as the context sees nodes (found with
// MPI_COMM_TYPE_SHARED, or faked by ranks_per_node). The registry chooses backends by it,
// the shm backend refuses a communicator that spans nodes, and the hierarchical backend
// splits along it.
#pragma once

#include <mpi.h>

#include <vector>

namespace zrt {

class Context;

struct GroupNodes {
  int nodes = 1;
  std::vector<int> node_of;        // per rank of the communicator: 0 .. nodes-1, in order
                                   // of each node's lowest rank
  std::vector<int> local_rank_of;  // per rank: its place among its node's ranks
  int ranks_per_node = 1;          // when every node has as many ranks; 0 otherwise
  bool faked = false;              // nodes come from ranks_per_node
  bool shared_memory = true;       // every rank can map every other's memory
};

// Collective over comm; throws Error(ZRT_ERR_MPI) when MPI fails.
GroupNodes group_nodes(const Context &context, MPI_Comm comm);

}  // namespace zrt
