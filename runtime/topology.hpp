// Where this rank runs: which node, its place among the node's ranks, its cores, NUMA
// node, nearest GPU and NIC. Loaded with hwloc (init -> I/O filter -> load -> query, as in
// hwloc's doc/examples/gpu.c). When discovery or binding fails the rank logs a warning
// and runs unbound: topology is an optimisation, never a reason to fail.
#pragma once

#include <hwloc.h>
#include <mpi.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "runtime/mpi_comm.hpp"
#include "zerort/context.h"

namespace zrt {

// The node a rank belongs to; computed collectively.
struct NodeLayout {
  int node_id = 0;
  int node_count = 1;
  int local_rank = 0;
  int local_size = 1;
  bool faked = false;  // nodes were given by ranks_per_node, not found
};

// Splits comm into nodes (MPI_COMM_TYPE_SHARED, or blocks of ranks_per_node consecutive
// ranks when it is > 0). Returns the layout and the node communicator, which the caller
// frees. Collective over comm; throws Error(ZRT_ERR_MPI) when MPI fails.
NodeLayout split_nodes(MPI_Comm comm, int ranks_per_node, MpiComm *node_comm_p);

struct TopologyDevice {
  std::string kind;        // "gpu" or "nic"
  std::string name;        // "eth0", "mlx5_0", the CUDA device name, or the PCI model
  std::string pci_bus_id;  // "0000:3b:00.0", empty if unknown
  std::string subtype;     // nic: "ethernet" or "infiniband"; gpu: vendor
  std::string cpuset;      // the cores it is attached to, as a list ("0-15")
  int numa_node = -1;
  int cuda_index = -1;  // gpu: index in the CUDA runtime, -1 if not visible
  bool near = false;    // attached to cores this rank is bound to
};

// The device of @p devices for the rank with @p local_rank: near devices first (attached to
// the rank's cores), InfiniBand first among NICs when @p prefer_infiniband, and among GPUs
// only those the CUDA runtime shows when it shows any (CUDA_VISIBLE_DEVICES, set per task by
// Slurm's --gpu-bind or by hand, hides the others though hwloc still lists them); local
// ranks take turns among the candidates. -1 when there is none.
int pick_device(const std::vector<TopologyDevice> &devices, int local_rank, bool prefer_infiniband);

class Topology {
 public:
  // Discovers the node and places this rank according to bind ("auto", "none", "core").
  // Local; never throws for hwloc failures.
  Topology(const NodeLayout &layout, const std::string &bind);
  ~Topology();
  Topology(const Topology &) = delete;
  Topology &operator=(const Topology &) = delete;

  const NodeLayout &layout() const { return layout_; }
  bool loaded() const { return topo_ != nullptr; }
  hwloc_topology_t hwloc() const { return topo_; }  // nullptr when discovery failed

  int packages() const { return packages_; }
  int cores() const { return cores_; }
  int pus() const { return pus_; }
  int numa_nodes() const { return numa_nodes_; }
  zrt_bound_by_t bound_by() const { return bound_by_; }
  const std::string &binding() const { return binding_; }
  hwloc_const_bitmap_t bound_set() const { return bound_set_; }  // nullptr without hwloc
  int bound_pus() const { return bound_pus_; }
  int numa_node() const { return numa_node_; }
  const std::vector<TopologyDevice> &gpus() const { return gpus_; }
  const std::vector<TopologyDevice> &nics() const { return nics_; }
  int gpu() const { return gpu_; }  // index into gpus(), -1 if none
  int nic() const { return nic_; }  // index into nics(), -1 if none
  const std::vector<std::string> &warnings() const { return warnings_; }

  nlohmann::json to_json() const;

 private:
  void warn(std::string message);
  void count_objects();
  void bind(const std::string &policy);
  void find_devices();
  void choose_devices();
  std::string cpuset_of(hwloc_obj_t obj, int *numa) const;

  NodeLayout layout_;
  hwloc_topology_t topo_ = nullptr;
  hwloc_bitmap_t bound_set_ = nullptr;
  int packages_ = 0, cores_ = 0, pus_ = 0, numa_nodes_ = 0;
  zrt_bound_by_t bound_by_ = ZRT_BOUND_BY_NONE;
  std::string binding_;
  int bound_pus_ = 0;
  int numa_node_ = -1;
  std::vector<TopologyDevice> gpus_, nics_;
  int gpu_ = -1, nic_ = -1;
  std::string cuda_status_;
  std::vector<std::string> warnings_;
};

}  // namespace zrt
