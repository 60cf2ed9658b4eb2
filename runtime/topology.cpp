#include "runtime/topology.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <memory>

#include "runtime/error.hpp"
#include "runtime/gpu/cuda_runtime_devices.hpp"
#include "runtime/log.hpp"
#include "runtime/mpi_error.hpp"

namespace zrt {

namespace {

struct BitmapFree {
  void operator()(hwloc_bitmap_s *b) const { hwloc_bitmap_free(b); }
};
using Bitmap = std::unique_ptr<hwloc_bitmap_s, BitmapFree>;

std::string list_string(hwloc_const_bitmap_t set) {
  char *s = nullptr;
  if (set == nullptr || hwloc_bitmap_list_asprintf(&s, set) < 0 || s == nullptr) return "";
  std::string out(s);
  std::free(s);
  return out;
}

std::string pci_bus_id(const hwloc_obj_t pci) {
  const auto &a = pci->attr->pcidev;
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", a.domain, a.bus, a.dev, a.func);
}

}  // namespace

NodeLayout split_nodes(MPI_Comm comm, int ranks_per_node, MpiComm *node_comm_p) {
  int rank = 0, size = 1;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  NodeLayout layout;
  if (ranks_per_node > 0) {
    layout.faked = true;
  }
  MpiComm node_comm = ranks_per_node > 0
                          ? MpiComm::split(comm, rank / ranks_per_node, rank)
                          : MpiComm::split_type(comm, MPI_COMM_TYPE_SHARED, rank,
                                                "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
  check_mpi(MPI_Comm_rank(node_comm, &layout.local_rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(node_comm, &layout.local_size), "MPI_Comm_size");
  // A node is named by its lowest rank; node ids follow the order of those ranks.
  int leader = rank;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node_comm),
            "MPI_Allreduce(node leader)");
  std::vector<int> leaders(static_cast<size_t>(size));
  check_mpi(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm),
            "MPI_Allgather(node leaders)");
  std::sort(leaders.begin(), leaders.end());
  leaders.erase(std::unique(leaders.begin(), leaders.end()), leaders.end());
  layout.node_count = static_cast<int>(leaders.size());
  layout.node_id =
      static_cast<int>(std::lower_bound(leaders.begin(), leaders.end(), leader) - leaders.begin());
  *node_comm_p = std::move(node_comm);
  return layout;
}

Topology::Topology(const NodeLayout &layout, const std::string &bind_policy) : layout_(layout) {
  if (hwloc_topology_init(&topo_) != 0) {
    topo_ = nullptr;
    warn("hwloc_topology_init failed: running unbound, without topology");
    return;
  }
  // Without an I/O filter hwloc reports no GPUs or NICs at all.
  hwloc_topology_set_io_types_filter(topo_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(topo_) != 0) {
    hwloc_topology_destroy(topo_);
    topo_ = nullptr;
    warn("hwloc_topology_load failed: running unbound, without topology");
    return;
  }
  count_objects();
  bind(bind_policy);
  find_devices();
  choose_devices();
}

Topology::~Topology() {
  if (bound_set_ != nullptr) hwloc_bitmap_free(bound_set_);
  if (topo_ != nullptr) hwloc_topology_destroy(topo_);
}

void Topology::warn(std::string message) {
  log::warn("{}", message);
  warnings_.push_back(std::move(message));
}

void Topology::count_objects() {
  packages_ = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_PACKAGE);
  cores_ = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_CORE);
  pus_ = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_PU);
  numa_nodes_ = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_NUMANODE);
  if (cores_ <= 0) cores_ = pus_;
}

void Topology::bind(const std::string &policy) {
  hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(topo_);
  Bitmap current(hwloc_bitmap_alloc());
  bool known = hwloc_get_cpubind(topo_, current.get(), HWLOC_CPUBIND_PROCESS) == 0;
  if (!known) hwloc_bitmap_copy(current.get(), allowed);
  // Bound by someone else when the process may not run on every allowed PU.
  bool launcher_bound = known && !hwloc_bitmap_isincluded(allowed, current.get());

  bound_by_ = launcher_bound ? ZRT_BOUND_BY_LAUNCHER : ZRT_BOUND_BY_NONE;
  if (policy == "core" || (policy == "auto" && !launcher_bound)) {
    int n = std::max(1, layout_.local_size);
    std::vector<hwloc_bitmap_t> sets(static_cast<size_t>(n));
    hwloc_obj_t root = hwloc_get_root_obj(topo_);
    if (hwloc_distrib(topo_, &root, 1, sets.data(), static_cast<unsigned>(n), INT_MAX, 0) == 0) {
      hwloc_bitmap_t mine = sets[static_cast<size_t>(layout_.local_rank % n)];
      hwloc_bitmap_and(mine, mine, allowed);
      if (hwloc_bitmap_iszero(mine)) {
        warn("hwloc_distrib gave this rank no allowed processing unit: running unbound");
      } else if (!hwloc_bitmap_isequal(mine, current.get())) {
        if (hwloc_set_cpubind(topo_, mine, HWLOC_CPUBIND_PROCESS) == 0) {
          hwloc_bitmap_copy(current.get(), mine);
          bound_by_ = ZRT_BOUND_BY_ZERORT;
        } else {
          warn(fmt::format("binding to PUs {} failed: running unbound", list_string(mine)));
        }
      }
      for (hwloc_bitmap_t s : sets)
        hwloc_bitmap_free(s);
    } else {
      warn("hwloc_distrib failed: running unbound");
    }
  }
  bound_set_ = current.release();
  binding_ = list_string(bound_set_);
  bound_pus_ = hwloc_bitmap_weight(bound_set_);
  // The NUMA node whose cores contain the whole binding, if there is one.
  for (int i = 0; i < numa_nodes_; ++i) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    if (numa != nullptr && hwloc_bitmap_isincluded(bound_set_, numa->cpuset)) {
      numa_node_ = static_cast<int>(numa->os_index);
      break;
    }
  }
}

std::string Topology::cpuset_of(hwloc_obj_t obj, int *numa) const {
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo_, obj);
  if (anc == nullptr) return "";
  *numa = -1;
  if (anc->nodeset != nullptr && hwloc_bitmap_weight(anc->nodeset) == 1)
    *numa = hwloc_bitmap_first(anc->nodeset);
  return list_string(anc->cpuset);
}

void Topology::find_devices() {
  CudaRuntimeInfo cuda = query_cuda_runtime();
  cuda_status_ = cuda.status;

  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo_, nullptr); pci != nullptr;
       pci = hwloc_get_next_pcidev(topo_, pci)) {
    unsigned cls = pci->attr->pcidev.class_id >> 8;
    unsigned vendor = pci->attr->pcidev.vendor_id;
    // Display controllers (0x03) and processing accelerators (0x12) of GPU vendors.
    bool gpu_vendor = vendor == 0x10de || vendor == 0x1002 || vendor == 0x8086;
    if (!((cls == 0x03 || cls == 0x12) && gpu_vendor)) continue;
    if (vendor == 0x8086 && cls == 0x03) continue;  // integrated Intel graphics
    TopologyDevice d;
    d.kind = "gpu";
    d.pci_bus_id = pci_bus_id(pci);
    d.subtype = vendor == 0x10de ? "nvidia" : vendor == 0x1002 ? "amd" : "intel";
    const char *model = hwloc_obj_get_info_by_name(pci, "PCIDevice");
    d.name = model != nullptr ? model : "GPU";
    d.cpuset = cpuset_of(pci, &d.numa_node);
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo_, pci);
    d.near = anc != nullptr && hwloc_bitmap_intersects(anc->cpuset, bound_set_);
    for (const CudaRuntimeDevice &c : cuda.devices) {
      if (c.pci_bus_id == d.pci_bus_id) {
        d.cuda_index = c.index;
        d.name = c.name;
      }
    }
    gpus_.push_back(std::move(d));
  }
  // hwloc may lack PCI discovery; the CUDA runtime still names its devices.
  for (const CudaRuntimeDevice &c : cuda.devices) {
    bool listed = std::any_of(gpus_.begin(), gpus_.end(),
                              [&](const TopologyDevice &g) { return g.cuda_index == c.index; });
    if (!listed) {
      TopologyDevice d;
      d.kind = "gpu";
      d.name = c.name;
      d.pci_bus_id = c.pci_bus_id;
      d.subtype = "nvidia";
      d.cuda_index = c.index;
      gpus_.push_back(std::move(d));
    }
  }

  for (hwloc_obj_t os = hwloc_get_next_osdev(topo_, nullptr); os != nullptr;
       os = hwloc_get_next_osdev(topo_, os)) {
    auto type = os->attr->osdev.type;
    if (type != HWLOC_OBJ_OSDEV_NETWORK && type != HWLOC_OBJ_OSDEV_OPENFABRICS) continue;
    TopologyDevice d;
    d.kind = "nic";
    d.name = os->name != nullptr ? os->name : "?";
    d.subtype = type == HWLOC_OBJ_OSDEV_OPENFABRICS ? "infiniband" : "ethernet";
    if (os->parent != nullptr && os->parent->type == HWLOC_OBJ_PCI_DEVICE)
      d.pci_bus_id = pci_bus_id(os->parent);
    d.cpuset = cpuset_of(os, &d.numa_node);
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo_, os);
    d.near = anc != nullptr && hwloc_bitmap_intersects(anc->cpuset, bound_set_);
    nics_.push_back(std::move(d));
  }
}

int pick_device(const std::vector<TopologyDevice> &devices, int local_rank,
                bool prefer_infiniband) {
  const bool any_visible = std::any_of(devices.begin(), devices.end(), [](const auto &d) {
    return d.kind == "gpu" && d.cuda_index >= 0;
  });
  std::vector<int> candidates;
  for (int pass = 0; pass < 4 && candidates.empty(); ++pass) {
    const bool need_near = pass < 2;
    const bool need_ib = prefer_infiniband && pass % 2 == 0;
    for (size_t i = 0; i < devices.size(); ++i) {
      const TopologyDevice &d = devices[i];
      if (any_visible && d.kind == "gpu" && d.cuda_index < 0) continue;
      if (need_near && !d.near) continue;
      if (need_ib && d.subtype != "infiniband") continue;
      candidates.push_back(static_cast<int>(i));
    }
  }
  if (candidates.empty()) return -1;
  return candidates[static_cast<size_t>(local_rank) % candidates.size()];
}

void Topology::choose_devices() {
  // Near devices first; among them, local ranks take turns, which for the usual block
  // placement (ranks 0-3 on socket 0, 4-7 on socket 1) gives each rank its own GPU.
  gpu_ = pick_device(gpus_, layout_.local_rank, false);
  nic_ = pick_device(nics_, layout_.local_rank, true);
}

nlohmann::json Topology::to_json() const {
  auto device_json = [](const TopologyDevice &d) {
    nlohmann::json j{{"name", d.name},     {"pci_bus_id", d.pci_bus_id}, {"type", d.subtype},
                     {"cpuset", d.cpuset}, {"numa_node", d.numa_node},   {"near", d.near}};
    if (d.kind == "gpu") j["cuda_index"] = d.cuda_index;
    return j;
  };
  nlohmann::json gpus = nlohmann::json::array(), nics = nlohmann::json::array();
  for (const auto &g : gpus_)
    gpus.push_back(device_json(g));
  for (const auto &n : nics_)
    nics.push_back(device_json(n));
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  const char *bound_by = bound_by_ == ZRT_BOUND_BY_ZERORT     ? "zerort"
                         : bound_by_ == ZRT_BOUND_BY_LAUNCHER ? "launcher"
                                                              : "none";
  return {
      {"hostname", host},
      {"hwloc", topo_ != nullptr},
      {"hwloc_version", HWLOC_API_VERSION},
      {"node_id", layout_.node_id},
      {"node_count", layout_.node_count},
      {"nodes_faked", layout_.faked},
      {"local_rank", layout_.local_rank},
      {"local_size", layout_.local_size},
      {"packages", packages_},
      {"cores", cores_},
      {"pus", pus_},
      {"numa_nodes", numa_nodes_},
      {"bound_by", bound_by},
      {"binding", binding_},
      {"bound_pus", bound_pus_},
      {"numa_node", numa_node_},
      {"gpus", gpus},
      {"gpu", gpu_},
      {"nics", nics},
      {"nic", nic_ >= 0 ? nics_[static_cast<size_t>(nic_)].name : ""},
      {"cuda", cuda_status_},
      {"warnings", warnings_},
  };
}

}  // namespace zrt
