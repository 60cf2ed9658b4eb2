// The one place that knows which communication backends this build has, and chooses
// among them (the rule is in registry.hpp).
#include "comm/registry.hpp"

#include <algorithm>

#include "comm/dtype.hpp"
#include "comm/group_nodes.hpp"
#include "comm/hier/hier_backend.hpp"
#include "comm/mpi/mpi_backend.hpp"
#include "comm/shm/shm_backend.hpp"
#include "comm/staged/staged_backend.hpp"
#include "memory/memory_part.hpp"
#include "runtime/agree.hpp"
#include "runtime/error.hpp"
#include "runtime/log.hpp"
#include "runtime/mpi_error.hpp"
#include "runtime/runtime_context.hpp"
#if ZRT_HAVE_UCX
#include "comm/ucx/ucx_backend.hpp"
#endif
#if ZRT_HAVE_NCCL
#include "comm/nccl/nccl_backend.hpp"
#endif

namespace zrt {

namespace {

using Factory = std::unique_ptr<Backend> (*)(const BackendGroup &);

std::unique_ptr<Backend> make_shm(const BackendGroup &group) {
  return std::make_unique<ShmBackend>(group);
}

std::unique_ptr<Backend> make_staged(const BackendGroup &group) {
  return std::make_unique<StagedBackend>(group);
}

struct Entry {
  const char *name;
  Factory create;
};

const std::vector<Entry> &entries() {
  static const std::vector<Entry> list = {
    {"mpi", &make_mpi_backend},
    {"shm", &make_shm},
#if ZRT_HAVE_UCX
    {"ucx", &make_ucx_backend},
#endif
    {"hier", &make_hier_backend},
    {"staged", &make_staged},
#if ZRT_HAVE_NCCL
    {"nccl", &make_nccl_backend},
#endif
  };
  return list;
}

const Entry *find(const std::string &name) {
  for (const Entry &e : entries())
    if (name == e.name) return &e;
  return nullptr;
}

}  // namespace

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const auto &e : entries())
    names.emplace_back(e.name);
  return names;
}

std::unique_ptr<Backend> create_network_backend(const BackendGroup &group,
                                                const std::string &choice) {
  if (choice != "mpi" && find("ucx") != nullptr) {
    std::unique_ptr<Backend> b;
    try {
      run_agreed(group.comm, [&] { b = find("ucx")->create(group); });
      return b;
    } catch (const Error &e) {
      if (group.rank == 0)
        log::warn("backend ucx could not start ({}); using mpi instead", e.what());
    }
  }
  return make_mpi_backend(group);
}

std::unique_ptr<Backend> create_host_backend(const BackendGroup &group) {
  GroupNodes nodes = group_nodes(*group.context, group.comm);
  if (nodes.nodes == 1 && nodes.shared_memory) {
    std::unique_ptr<Backend> b;
    run_agreed(group.comm, [&] { b = make_shm(group); });
    return b;
  }
  if (nodes.ranks_per_node >= 2) {
    std::unique_ptr<Backend> b;
    run_agreed(group.comm, [&] { b = make_hier_backend(group); });
    return b;
  }
  return create_network_backend(group, "auto");
}

BackendSet::~BackendSet() = default;

BackendSet::BackendSet(const BackendGroup &group, const std::string &requested)
    : requested_(requested) {
  if (requested != "auto" && find(requested) == nullptr)
    fail(ZRT_ERR_INVALID_ARGUMENT,
         "backend '{}' is not available in this build: accepted values are auto, {}", requested,
         fmt::join(backend_names(), ", "));

  // Creates a backend on every rank or on none; returns its index, or -1 with `why` set
  // when it failed everywhere and `optional`.
  auto create = [&](const std::string &name, bool optional, std::string *why) -> int {
    for (size_t i = 0; i < backends_.size(); ++i)
      if (name == backends_[i]->name()) return static_cast<int>(i);
    std::unique_ptr<Backend> b;
    try {
      run_agreed(group.comm, [&] { b = find(name)->create(group); });
    } catch (const Error &e) {
      if (!optional) throw;
      if (why != nullptr) *why = e.what();
      return -1;
    }
    backends_.push_back(std::move(b));
    return static_cast<int>(backends_.size()) - 1;
  };
  // ucx falls back to mpi with a warning: a transport list that does not fit this node
  // should cost speed, not the job.
  auto create_ucx_or_mpi = [&]() -> int {
    if (find("ucx") == nullptr) return create("mpi", false, nullptr);
    std::string why;
    int i = create("ucx", true, &why);
    if (i >= 0) return i;
    if (group.rank == 0) log::warn("backend ucx could not start ({}); using mpi instead", why);
    return create("mpi", false, nullptr);
  };

  small_bytes_ = static_cast<size_t>(group.context->config().get_int("comm.small_bytes"));
  if (requested != "auto") {
    int i = requested == "ucx" ? create_ucx_or_mpi() : create(requested, false, nullptr);
    host_ = host_small_ = device_ = i;
    why_ = requested == backends_[static_cast<size_t>(i)]->name()
               ? "requested"
               : "requested ucx, which could not start";
    return;
  }

  GroupNodes nodes = group_nodes(*group.context, group.comm);
  if (nodes.nodes == 1 && nodes.shared_memory) {
    host_ = host_small_ = create("shm", false, nullptr);
    why_ = fmt::format("one node, {} rank(s)", group.size);
  } else if (nodes.ranks_per_node >= 2) {
    host_ = create("hier", false, nullptr);
    host_small_ = create("mpi", false, nullptr);
    why_ = fmt::format("{} nodes of {} ranks{}", nodes.nodes, nodes.ranks_per_node,
                       nodes.faked ? " (faked)" : "");
  } else {
    host_ = create_ucx_or_mpi();
    host_small_ = create("mpi", false, nullptr);
    why_ = nodes.ranks_per_node == 1 ? fmt::format("{} nodes of one rank", nodes.nodes)
                                     : fmt::format("{} nodes of uneven rank counts", nodes.nodes);
  }
  choose_device(group, create);
}

void BackendSet::choose_device(
    const BackendGroup &group,
    const std::function<int(const std::string &, bool, std::string *)> &create) {
  // nccl where it serves: a CUDA device and one rank per GPU (NCCL refuses two ranks on
  // one, and then fails to start on every rank: creation is agreed). Otherwise staged,
  // which any device serves, the emulated one included. Every rank decides alike: the
  // device's kind is agreed first.
  std::string missing;
  Device *device = group.context->part<MemoryPart>().device(&missing);
  int kinds[2] = {device != nullptr && std::string(device->kind()) == "cuda" ? 1 : 0,
                  device != nullptr ? 1 : 0};
  int lowest[2] = {0, 0};
  check_mpi(MPI_Allreduce(kinds, lowest, 2, MPI_INT, MPI_MIN, group.comm),
            "MPI_Allreduce(device kinds)");
  std::string nccl_missing;
  if (lowest[0] == 1) {
    if (find("nccl") == nullptr) {
      nccl_missing = "this build has no NCCL";
    } else {
      device_ = create("nccl", true, &nccl_missing);
      if (device_ >= 0) device_why_ = "nccl: a CUDA device and one rank per GPU";
    }
  } else {
    nccl_missing = lowest[1] == 1 ? "the device is emulated (memory.device.emulate)" : missing;
  }
  if (device_ >= 0) return;
  if (lowest[1] == 0) {
    device_missing_ = device != nullptr ? "another rank has no device" : missing;
    return;
  }
  device_ = create("staged", true, &device_missing_);
  if (device_ >= 0) device_why_ = "staged through pinned host memory: " + nccl_missing;
}

Backend &BackendSet::choose(const CollArgs &a, MemoryKind memory, int *index) const {
  int i = host_;
  if (memory == MemoryKind::Device) {
    i = device_;
    if (i < 0)
      fail(ZRT_ERR_NOT_SUPPORTED, "the buffers are {} and no backend serves it: {}",
           memory_kind_name(memory), device_missing_);
  } else if (a.count * dtype_size(a.dtype) < small_bytes_) {
    i = host_small_;
  }
  Backend &b = *backends_[static_cast<size_t>(i)];
  if (!b.serves(memory))
    fail(ZRT_ERR_NOT_SUPPORTED, "backend {} does not serve {}, where the buffers of this {} are",
         b.name(), memory_kind_name(memory), coll_name(a.kind));
  *index = i;
  return b;
}

void BackendSet::abandoned() {
  for (auto &b : backends_)
    b->abandoned();
}

SharedBuffers *BackendSet::shared_buffers() const {
  return backends_[static_cast<size_t>(host_)]->shared_buffers();
}

const char *BackendSet::primary() const {
  return backends_[static_cast<size_t>(host_)]->name();
}

void BackendSet::describe(nlohmann::json &out) const {
  nlohmann::json created = nlohmann::json::object();
  for (const auto &b : backends_) {
    nlohmann::json facts = nlohmann::json::object();
    b->describe(facts);
    created[b->name()] = facts;
  }
  out = {{"requested", requested_},
         {"host", backends_[static_cast<size_t>(host_)]->name()},
         {"host_small", backends_[static_cast<size_t>(host_small_)]->name()},
         {"small_bytes", small_bytes_},
         {"device", device_ >= 0 ? nlohmann::json(backends_[static_cast<size_t>(device_)]->name())
                                 : nlohmann::json(nullptr)},
         {"why", why_},
         {"created", created}};
  if (device_ < 0)
    out["device_missing"] = device_missing_;
  else
    out["device_why"] = device_why_;
}

}  // namespace zrt
