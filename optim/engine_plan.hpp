// An engine planned, not made: what zrt_engine_memory would report on a rank of an engine
// with these settings and parameters on a given machine, right after zrt_engine_commit.
// It is computed by the code that lays an engine out (the parameter registry's checks,
// Layout, StageLayout, ModelState::plan, GradientReducer::initial_buffers), with nothing
// allocated and no MPI, so the figures are the engine's own, to the byte.
//
// Every rank of an engine holds the same bytes (the buckets are padded to whole slices),
// so one report stands for all. Stage 3's gathered groups come and go with the program's
// gathers and are not in a commit's report; they are planned apart, bounded by
// max_live_elements and the gatherer's buffer sizes (gathered_bound()).
#pragma once

#include "optim/param_registry.hpp"
#include "optim/zero_engine.hpp"

namespace zrt {

struct PlanMachine {
  int nranks = 1;          // ranks the engine spans
  int ranks_per_node = 1;  // of them, ranks on one node
  bool device = false;     // a GPU per rank: engine.memory_space = auto goes to it
  // The backend maps node-shared windows (shm; hier inside a node): the engine's collective
  // buffers go to one (engine.shared_buffers).
  bool shared_window = true;
};

class EnginePlan {
 public:
  // Throws Error naming the field when the machine is not one (no ranks, more ranks per
  // node than ranks).
  EnginePlan(const EngineSettings &settings, const PlanMachine &machine);

  // As zrt_param_register: checks the name and shape, throws Error naming them.
  int add_param(const char *name, int ndim, const int64_t *shape);
  int param_count() const { return params_.count(); }

  // Throws Error(ZRT_ERR_INVALID_STATE) when no parameter is registered.
  MemoryReport memory() const;
  // The report of a rank right after the commit of an engine laid out as `layout` at
  // `stage`, with its buffers on the device or not, and a node-shared window over
  // window_ranks ranks (0: none): what memory() reports, and what the engine's commit
  // compares with the memory it may use before it allocates (optim/memory_fit.hpp).
  static MemoryReport planned_memory(const EngineSettings &settings, const StageLayout &stage,
                                     const Layout &layout, bool device, int window_ranks);
  // Stage 3: the most bytes of gathered-parameter buffers a rank holds at once while the
  // program holds a group or two gathered at a time (the groups max_live_elements keeps,
  // the one in use and the one prefetched, each buffer at least the largest single-bucket
  // group's, and the two spares the gatherer keeps); 0 at other stages.
  size_t gathered_bound() const;
  // The collectives of one optimizer step without gradient accumulation, as the engine
  // posts them (one per bucket) and as zrt_step_report_t counts their bytes (each bucket's
  // whole padded length): stage 0 all-reduces the gradients; 1 and 2 reduce-scatter them
  // and all-gather the updated parameters; 3 reduce-scatters and gathers each group for
  // use, once if the parameters fit max_live_elements (they then stay), else again in
  // backward.
  struct Collectives {
    int64_t reduce_scatter_calls = 0, all_gather_calls = 0, all_reduce_calls = 0;
    int64_t reduce_scatter_bytes = 0, all_gather_bytes = 0, all_reduce_bytes = 0;
  };
  Collectives collectives() const;
  bool on_device() const { return device_; }
  const EngineSettings &settings() const { return settings_; }

 private:
  Layout layout() const;

  EngineSettings settings_;
  PlanMachine machine_;
  StageLayout stage_;
  bool device_ = false;
  ParamRegistry params_;
};

}  // namespace zrt
