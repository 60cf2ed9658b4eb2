// The backend registry: which backends this build has, and which one serves a collective.
//
// "auto" (the default of comm.backend) chooses per collective, the same way on every rank:
//   device memory          -> nccl when built and it starts (one rank per GPU) on a CUDA
//                             device; staged (device -> pinned host -> the host backend
//                             -> device) otherwise, and always on the emulated device
//   host memory, one node  -> shm
//   host memory, several nodes with more than one rank each
//                          -> hier (shm inside each node, ucx or mpi between nodes), and
//                             mpi below comm.small_bytes, where latency rules
//   host memory, one rank per node (or uneven nodes)
//                          -> ucx (mpi if UCX is not built or cannot start), and mpi below
//                             comm.small_bytes
// A backend named in ZRT_COMM_BACKEND / comm.backend / zrt_comm_params_t serves every
// collective, and a buffer it cannot serve is an error that names both. A ucx backend
// that cannot start (UCX_TLS naming a transport this node lacks) falls back to mpi with a
// warning, named or not.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/backend.hpp"

namespace zrt {

class BackendSet {
 public:
  // Collective over group.comm: creates the backends that `requested` may choose. Fails
  // on every rank together.
  BackendSet(const BackendGroup &group, const std::string &requested);
  ~BackendSet();

  // The backend for one collective, and its index (for the cross-rank agreement). Local;
  // throws Error(ZRT_ERR_NOT_SUPPORTED) naming the memory and the backend when none serves.
  Backend &choose(const CollArgs &args, MemoryKind memory, int *index) const;
  // What serves large host buffers: the name zrt_comm_backend reports.
  const char *primary() const;
  // Where zrt_comm_mem_alloc allocates: the shared buffers of the backend serving large
  // host buffers, if it has them.
  SharedBuffers *shared_buffers() const;
  void describe(nlohmann::json &out) const;
  // The watchdog abandoned operations: see Backend::abandoned.
  void abandoned();

 private:
  std::string requested_;
  std::vector<std::unique_ptr<Backend>> backends_;
  int host_ = -1, host_small_ = -1, device_ = -1;
  size_t small_bytes_ = 0;
  std::string device_missing_;  // why no backend serves device memory
  std::string device_why_;      // why the one that does was chosen
  void choose_device(const BackendGroup &group,
                     const std::function<int(const std::string &, bool, std::string *)> &create);
  std::string why_;  // why auto chose as it did
};

// Every backend this build has, in the order zrt-info lists them.
std::vector<std::string> backend_names();

// A backend between nodes for the hierarchical backend: choice "ucx", "mpi", or "auto"
// (ucx when built). ucx that cannot start falls back to mpi with a warning. Collective.
std::unique_ptr<Backend> create_network_backend(const BackendGroup &group,
                                                const std::string &choice);

// The backend "auto" chooses for large host buffers on this group (shm, hier, or ucx/mpi;
// see the rule above), for a backend built on host collectives (comm/staged/). Collective.
std::unique_ptr<Backend> create_host_backend(const BackendGroup &group);

}  // namespace zrt
