// The optim layer's share of a context: the engines made on it, destroyed with it.
#pragma once

#include <cstdint>
#include <set>

#include "runtime/context.hpp"

namespace zrt {

class Engine;

struct ParamRef {
  Engine *engine;
  int index;
};

HandleTable<Engine> &engine_table();
HandleTable<ParamRef> &param_table();

class EnginePart final : public ContextPart {
 public:
  explicit EnginePart(Context &) {}
  ~EnginePart() override;
  const char *name() const override { return "optim"; }
  void describe(nlohmann::json &out) const override;

  void adopt(uintptr_t engine) { engines_.insert(engine); }
  void forget(uintptr_t engine) { engines_.erase(engine); }

 private:
  std::set<uintptr_t> engines_;
};

// Removes an engine, its parameter handles, and its entry in the context's part.
void destroy_engine(uintptr_t handle);

}  // namespace zrt
