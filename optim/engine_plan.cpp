#include "optim/engine_plan.hpp"

#include <algorithm>

#include "comm/dtype.hpp"
#include "optim/gradient_reducer.hpp"
#include "optim/model_state.hpp"

namespace zrt {

EnginePlan::EnginePlan(const EngineSettings &settings, const PlanMachine &machine)
    : settings_(settings), machine_(machine), stage_(StageLayout::of(settings.stage)) {
  if (machine.nranks < 1)
    fail(ZRT_ERR_INVALID_ARGUMENT, "nranks is {}: a machine has at least one rank", machine.nranks);
  if (machine.ranks_per_node < 1 || machine.ranks_per_node > machine.nranks)
    fail(ZRT_ERR_INVALID_ARGUMENT, "ranks_per_node is {}: accepted values are 1 .. nranks ({})",
         machine.ranks_per_node, machine.nranks);
  device_ = settings.memory_space == EngineMemorySpace::Device ||
            (settings.memory_space == EngineMemorySpace::Auto && machine.device);
}

int EnginePlan::add_param(const char *name, int ndim, const int64_t *shape) {
  return params_.add(name, settings_.dtype, settings_.dtype, ndim, shape);
}

Layout EnginePlan::layout() const {
  if (params_.count() == 0)
    fail(ZRT_ERR_INVALID_STATE, "the plan has no parameters: add them before asking for memory");
  // As Engine::commit_agreed lays the engine out.
  const size_t es = dtype_size(settings_.dtype);
  return Layout(params_.all(), std::max<size_t>(settings_.reduce_bucket_bytes / es, 1),
                machine_.nranks);
}

MemoryReport EnginePlan::memory() const {
  // Engine::share_buffers: a window where collectives read peers in place, on the host.
  const bool window = settings_.shared_buffers && !device_ && machine_.shared_window &&
                      machine_.ranks_per_node >= 2;
  return planned_memory(settings_, stage_, layout(), device_, window ? machine_.ranks_per_node : 0);
}

MemoryReport EnginePlan::planned_memory(const EngineSettings &settings, const StageLayout &stage,
                                        const Layout &layout, bool device, int window_ranks) {
  MemoryReport r;
  r.parameter_count = static_cast<int64_t>(layout.unpadded());
  const bool window = window_ranks > 0;
  int64_t shared = 0;
  for (const ModelState::Planned &b : ModelState::plan(stage, layout, settings, device)) {
    const int64_t bytes = static_cast<int64_t>(b.bytes);
    switch (b.kind) {
      case ModelState::Kind::Params:
      case ModelState::Kind::Staging:  // the updated parameters on their way
        r.parameters += bytes;
        break;
      case ModelState::Kind::Master:
        r.master_weights += bytes;
        break;
      case ModelState::Kind::M:
      case ModelState::Kind::V:
      case ModelState::Kind::Saved:  // the speculative step's copy of weights and moments
        r.optimizer_state += bytes;
        break;
      case ModelState::Kind::Grads:
      case ModelState::Kind::HostGrads:
        r.gradients += bytes;
        break;
    }
    (b.place == Place::Device ? r.device_bytes : r.host_bytes) += bytes;
    if (b.place == Place::Pinned) r.pinned_bytes += bytes;
    if (window && b.place == Place::Shared) shared += bytes;
  }
  const bool to_host = device && settings.offload_optimizer;
  for (size_t b : GradientReducer::initial_buffers(layout, stage, settings, to_host))
    r.buckets += static_cast<int64_t>(b);
  (device ? r.device_bytes : r.host_bytes) += r.buckets;
  if (window) shared += r.buckets;
  r.node_shared_bytes = shared;
  r.node_shared_ranks = window ? window_ranks : 0;
  return r;
}

EnginePlan::Collectives EnginePlan::collectives() const {
  const Layout layout = this->layout();
  Collectives c;  // posted on one rank too, where the backend copies
  const int64_t calls = static_cast<int64_t>(layout.buckets().size());
  const int64_t bytes = static_cast<int64_t>(layout.total() * dtype_size(settings_.dtype));
  switch (stage_.reduction) {
    case Reduction::AllReduce:
      c.all_reduce_calls = calls;
      c.all_reduce_bytes = bytes;
      break;
    case Reduction::ReduceScatterToSlice:
    case Reduction::ReduceScatterBuckets:
      c.reduce_scatter_calls = calls;
      c.reduce_scatter_bytes = bytes;
      break;
  }
  if (stage_.gather_after_step || stage_.gather_on_use) {
    const int64_t passes =
        stage_.gather_on_use && layout.total() > settings_.max_live_elements ? 2 : 1;
    c.all_gather_calls = passes * calls;
    c.all_gather_bytes = passes * bytes;
  }
  return c;
}

size_t EnginePlan::gathered_bound() const {
  if (!stage_.gather_on_use) return 0;
  const Layout layout = this->layout();
  const size_t es = dtype_size(settings_.dtype);
  // As ParamGatherer::fetch sizes a group's buffer: its group, and never less than the
  // largest single-bucket group, so that freed buffers serve any later group.
  const size_t floor = layout.max_single_group();
  std::vector<size_t> lengths;
  size_t largest = 0, all = 0;
  for (const BucketInfo &b : layout.buckets())
    if (b.group == b.index) {
      lengths.push_back(b.group_length);
      largest = std::max(largest, std::max(b.group_length, floor));
      all += std::max(b.group_length, floor);
    }
  // Resident groups stay within max_live_elements, counted by their lengths, plus the one
  // in use and the one prefetched; the most bytes such a set holds takes the shortest
  // groups first (each costs at least the floor). Two freed buffers wait as spares.
  std::sort(lengths.begin(), lengths.end());
  const size_t limit = settings_.max_live_elements + 2 * layout.max_single_group() +
                       std::max(layout.max_split_group(), layout.max_single_group());
  size_t elements = 0, resident = 0;
  for (size_t len : lengths) {
    if (elements + len > limit) break;
    elements += len;
    resident += std::max(len, floor);
  }
  return (std::min(all, resident) + 2 * largest) * es;
}

}  // namespace zrt
