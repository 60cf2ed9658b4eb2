// The comm layer's share of a context: the world communicator, every communicator made
// from the context (destroyed with it), and the progress/watchdog thread that serves them.
#pragma once

#include <cstdint>
#include <memory>
#include <set>

#include "comm/communicator.hpp"
#include "comm/progress_thread.hpp"
#include "runtime/runtime_context.hpp"

namespace zrt {

class CommPart final : public ContextPart {
 public:
  explicit CommPart(Context &context);  // collective: creates the world communicator
  ~CommPart() override;

  static constexpr const char *kPartName = "comm";
  const char *name() const override { return kPartName; }
  void check_can_finalize() const override;
  void describe(nlohmann::json &out) const override;

  uintptr_t world() const { return world_; }
  void adopt(uintptr_t comm);
  void forget(uintptr_t comm);
  // The options of a new communicator from the configuration (params may override them).
  Communicator::Options default_options() const;

 private:
  Context &context_;
  std::unique_ptr<ProgressThread> thread_;  // before world_: it serves it
  std::string thread_missing_;              // why there is no thread
  uintptr_t world_ = 0;
  std::set<uintptr_t> comms_;  // made by zrt_comm_create, not yet destroyed
};

}  // namespace zrt
