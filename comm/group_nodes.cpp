#include "comm/group_nodes.hpp"

#include <map>

#include "runtime/agree.hpp"
#include "runtime/mpi_comm.hpp"
#include "runtime/mpi_error.hpp"
#include "runtime/runtime_context.hpp"

namespace zrt {

GroupNodes group_nodes(const Context &context, MPI_Comm comm) {
  int size = 1;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  const NodeLayout &layout = context.topology().layout();
  int mine = layout.node_id;
  std::vector<int> ids(static_cast<size_t>(size));
  watched_allgather(comm, &mine, 1, MPI_INT, ids.data(), "all-gather of the node ids");
  GroupNodes out;
  out.faked = layout.faked;
  out.node_of.resize(ids.size());
  out.local_rank_of.resize(ids.size());
  std::map<int, int> index, members;
  for (size_t r = 0; r < ids.size(); ++r) {
    auto [it, added] = index.emplace(ids[r], static_cast<int>(index.size()));
    out.node_of[r] = it->second;
    out.local_rank_of[r] = members[ids[r]]++;
  }
  out.nodes = static_cast<int>(index.size());
  out.ranks_per_node = members.begin()->second;
  for (const auto &m : members)
    if (m.second != out.ranks_per_node) out.ranks_per_node = 0;

  int shared_size = 0;
  {
    const MpiComm shared = MpiComm::split_type(comm, MPI_COMM_TYPE_SHARED, 0,
                                               "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
    MPI_Comm_size(shared, &shared_size);
  }
  // A rank whose shared group is smaller than the communicator cannot map everyone; all
  // ranks must agree, so they take the smallest answer.
  int all = shared_size == size ? 1 : 0;
  watched_allreduce(comm, &all, 1, MPI_INT, MPI_MIN, "agreement on shared memory");
  out.shared_memory = all == 1;
  return out;
}

}  // namespace zrt
