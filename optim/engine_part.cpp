#include "optim/engine_part.hpp"

#include <exception>

#include "comm/dtype.hpp"
#include "optim/zero_engine.hpp"
#include "runtime/log.hpp"

namespace zrt {

namespace {
const bool registered = register_context_part(
    30, [](Context &context) { return std::make_unique<EnginePart>(context); });
}  // namespace

HandleTable<Engine> &engine_table() {
  static HandleTable<Engine> table("engine");
  return table;
}

HandleTable<ParamRef> &param_table() {
  static HandleTable<ParamRef> table("parameter");
  return table;
}

void destroy_engine(uintptr_t handle) {
  engine_table().get(handle, "engine").context().part<EnginePart>().destroy(handle);
}

void EnginePart::destroy(uintptr_t handle) {
  Engine &e = engine_table().get(handle, "engine");
  // A save still writing in the background is published first, or its failure reported
  // (collective, as the destroy is); the engine goes either way. With the ranks out of
  // step the save cannot be agreed on: ~Engine stops it unpublished.
  std::exception_ptr save_failed;
  if (!e.context().breakage().broken()) {
    try {
      e.settle_save(true);
    } catch (...) {
      save_failed = std::current_exception();
    }
  }
  for (uintptr_t p : e.param_handles)
    param_table().remove(p, "parameter");
  e.param_handles.clear();
  engines_.erase(handle);
  engine_table().remove(handle, "engine");
  if (save_failed) std::rethrow_exception(save_failed);
}

EnginePart::EnginePart(Context &context) {
  kernels_ = &select_kernels(context.config().get_string("kernels.isa").c_str());
  const Topology &topo = context.topology();
  threads_ =
      std::make_unique<ThreadPool>(static_cast<int>(context.config().get_int("kernels.threads")),
                                   topo.hwloc(), topo.bound_set());
}

EnginePart::~EnginePart() {
  (void)registered;
  // zrt_finalize with engines alive: each goes as zrt_engine_destroy would take it (this
  // part is no longer among the context's, so it is not looked up).
  std::set<uintptr_t> left = engines_;
  for (uintptr_t e : left) {
    try {
      destroy(e);
    } catch (const std::exception &err) {  // zrt_finalize has no caller to report it to
      log::error("{}", err.what());
    }
  }
}

void EnginePart::describe(nlohmann::json &out) const {
  nlohmann::json engines = nlohmann::json::array();
  for (uintptr_t h : engines_) {
    const Engine &e = engine_table().get(h, "engine");
    const EngineSettings &s = e.settings();
    engines.push_back({{"stage", s.stage},
                       {"dtype", dtype_name(s.dtype)},
                       {"parameters", e.param_count()},
                       {"committed", e.committed()}});
  }
  out["engines"] = engines;
  out["optimizer_kernels"] = {{"isa", kernels_->isa}, {"threads", threads_->size()}};
}

}  // namespace zrt
