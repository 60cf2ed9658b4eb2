// The optim layer's share of a context: the engines made on it, destroyed with it.
#pragma once

#include <cstdint>
#include <set>

#include "optim/kernels/kernels.hpp"
#include "optim/kernels/thread_pool.hpp"
#include "runtime/runtime_context.hpp"

namespace zrt {

class Engine;

struct ParamRef {
  Engine *engine;
  int index;
};

HandleTable<Engine> &engine_table();
HandleTable<ParamRef> &param_table();

// Also owns the context's optimizer threads and kernel choice, which every engine (and
// zrt_optimizer_adam) of the context shares: one set of threads per rank, bound to its
// cores, however many engines there are.
class EnginePart final : public ContextPart {
 public:
  explicit EnginePart(Context &context);
  ~EnginePart() override;
  ThreadPool &threads() { return *threads_; }
  const KernelTable &kernels() const { return *kernels_; }
  static constexpr const char *kPartName = "optim";
  const char *name() const override { return kPartName; }
  void describe(nlohmann::json &out) const override;

  void adopt(uintptr_t engine) { engines_.insert(engine); }
  // Removes an engine, its parameter handles and its entry here. A background save still
  // writing is published first (collective) unless the context is broken; its failure is
  // rethrown after the engine is gone either way.
  void destroy(uintptr_t engine);

 private:
  std::set<uintptr_t> engines_;
  const KernelTable *kernels_ = nullptr;
  std::unique_ptr<ThreadPool> threads_;
};

// EnginePart::destroy of the engine's context.
void destroy_engine(uintptr_t handle);

}  // namespace zrt
