// The comm layer's share of a context: the world communicator and every communicator
// made from the context, destroyed with it.
#pragma once

#include <cstdint>
#include <set>

#include "runtime/context.hpp"

namespace zrt {

class CommPart final : public ContextPart {
 public:
  explicit CommPart(Context &context);  // collective: creates the world communicator
  ~CommPart() override;

  const char *name() const override { return "comm"; }
  void check_can_finalize() const override;
  void describe(nlohmann::json &out) const override;

  uintptr_t world() const { return world_; }
  void adopt(uintptr_t comm) { comms_.insert(comm); }
  void forget(uintptr_t comm) { comms_.erase(comm); }

 private:
  Context &context_;
  uintptr_t world_ = 0;
  std::set<uintptr_t> comms_;  // made by zrt_comm_create, not yet destroyed
};

}  // namespace zrt
