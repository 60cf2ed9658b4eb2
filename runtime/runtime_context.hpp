// The context behind zrt_context_h: zerort's duplicate of the caller's communicator, the
// resolved configuration, the topology, and one part per upper layer.
//
// Upper layers (comm, memory, optim) may not be called from runtime (see HACKING.md,
// "Layers and files"), so they register a factory for their ContextPart; zrt_init creates
// the parts in layer order and zrt_finalize destroys them in reverse.
#pragma once

#include <mpi.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/agreement_watch.hpp"
#include "runtime/breakage.hpp"
#include "runtime/config.hpp"
#include "runtime/handle_table.hpp"
#include "runtime/mpi_comm.hpp"
#include "runtime/topology.hpp"
#include "zerort/context.h"

namespace zrt {

class Context;

class ContextPart {
 public:
  virtual ~ContextPart() = default;
  virtual const char *name() const = 0;
  // Throws Error(ZRT_ERR_INVALID_STATE) when the context cannot be finalized now.
  virtual void check_can_finalize() const {}
  virtual void describe(nlohmann::json &out) const { (void)out; }
};

using ContextPartFactory = std::function<std::unique_ptr<ContextPart>(Context &)>;

// Called from a static initializer in each upper layer. order: memory 10, comm 20,
// optim 30. Returns true so it can initialize a namespace-scope constant.
bool register_context_part(int order, ContextPartFactory factory);

class Context {
 public:
  // Collective over user_comm. Throws the same Error on every rank on failure.
  Context(MPI_Comm user_comm, const zrt_init_params_t *params);
  ~Context();
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  MPI_Comm comm() const { return comm_; }
  MPI_Comm node_comm() const { return node_comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  const Config &config() const { return config_; }
  const Topology &topology() const { return *topology_; }
  int mpi_thread_level() const { return thread_level_; }
  zrt_log_level_t log_level() const { return log_level_; }

  template <class T>
  T &part() const {
    for (const auto &p : parts_)
      if (auto *t = dynamic_cast<T *>(p.get())) return *t;
    fail(ZRT_ERR_INTERNAL, "this context has no {} part (finalized?)", T::kPartName);
  }

  // Whether the ranks are out of step (runtime/breakage.hpp): marked by the context's
  // agreement watches and communicators; teardown then waits for no other rank.
  Breakage &breakage() const { return *breakage_; }
  const std::shared_ptr<Breakage> &shared_breakage() const { return breakage_; }

  void check_can_finalize() const;
  nlohmann::json describe() const;

  uintptr_t handle = 0;  // this context's own handle value

 private:
  // Releases what the context holds, without waiting for other ranks when they are out of
  // step: a set-up whose meeting timed out (timed_out), a broken context or failed watch.
  void release(bool timed_out) noexcept;

  std::shared_ptr<Breakage> breakage_ = std::make_shared<Breakage>();
  MpiComm comm_;
  std::unique_ptr<AgreementWatch> comm_watch_;  // deadlines for the agreements on comm_
  MpiComm node_comm_;
  int rank_ = 0, size_ = 1;
  int thread_level_ = MPI_THREAD_SINGLE;
  bool owns_mpi_ = false;
  zrt_log_level_t log_level_ = ZRT_LOG_WARN;
  Config config_;
  std::unique_ptr<Topology> topology_;
  std::vector<std::unique_ptr<ContextPart>> parts_;
};

HandleTable<Context> &context_table();
Context &context_from(zrt_context_h handle, const char *argument = "context");

}  // namespace zrt
