// The one place that knows which communication backends this build has, and chooses
// among them. Backends added by later builds (shm, ucx, nccl) register here.
#include <algorithm>

#include "comm/communicator.hpp"
#include "comm/mpi/mpi_backend.hpp"
#include "runtime/error.hpp"

namespace zrt {

namespace {

struct BackendEntry {
  const char *name;
  std::unique_ptr<Backend> (*create)(Communicator &);
};

const std::vector<BackendEntry> &entries() {
  // In order of preference for "auto".
  static const std::vector<BackendEntry> list = {
      {"mpi", &make_mpi_backend},
  };
  return list;
}

}  // namespace

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const auto &e : entries())
    names.emplace_back(e.name);
  return names;
}

std::unique_ptr<Backend> create_backend(Communicator &comm, const std::string &requested) {
  if (requested == "auto") return entries().front().create(comm);
  for (const auto &e : entries())
    if (requested == e.name) return e.create(comm);
  fail(ZRT_ERR_INVALID_ARGUMENT,
       "backend '{}' is not available in this build: accepted values "
       "are auto, {}",
       requested, fmt::join(backend_names(), ", "));
}

}  // namespace zrt
