#include "optim/model_state.hpp"

#include "comm/dtype.hpp"

namespace zrt {

namespace {

bool gathered(const StageLayout &stage) {
  return stage.gather_after_step || stage.gather_on_use;
}

}  // namespace

std::vector<size_t> ModelState::shared_buffers(const StageLayout &stage, const Layout &layout,
                                               const EngineSettings &settings) {
  const size_t esize = dtype_size(settings.dtype);
  std::vector<size_t> bytes;
  if (gathered(stage)) bytes.push_back(StageLayout::elements(stage.params, layout) * esize);
  bytes.push_back(StageLayout::elements(stage.grads, layout) * esize);
  return bytes;
}

ModelState::ModelState(EngineMemory &memory, const StageLayout &stage, const Layout &layout,
                       const EngineSettings &settings)
    : stage_(stage),
      dtype_(settings.dtype),
      esize_(dtype_size(settings.dtype)),
      mixed_(settings.mixed()) {
  const bool device = memory.on_device(), offload = settings.offload_optimizer;
  offload_device_ = device && offload;
  separate_weights_ = mixed_ || offload_device_;
  const Place near = device ? Place::Device : Place::Host;
  state_place_ = offload ? Place::Pinned : near;
  // Long-lived state packs at one end of each pool; buckets and landing buffers go to the
  // other (gradient_reducer.hpp).
  const Lifetime kLong = Lifetime::Long;
  const size_t state = StageLayout::elements(stage.state, layout) * sizeof(float);
  const size_t shard = StageLayout::elements(Extent::Shard, layout) * esize_;
  // What the collectives read in place goes to the node's shared window, where it has one.
  const Place shared = device ? Place::Device : Place::Shared;
  params_ = EngineBuffer(memory, gathered(stage) ? shared : near,
                         StageLayout::elements(stage.params, layout) * esize_, kLong);
  if (separate_weights_) master_ = EngineBuffer(memory, state_place_, state, kLong);
  if (settings.has_momentum()) m_ = EngineBuffer(memory, state_place_, state, kLong);
  if (settings.two_moments()) v_ = EngineBuffer(memory, state_place_, state, kLong);
  // Offloaded, the reduced shard lives on the host; stages 0-1 reduce from a full device
  // buffer first.
  if (!offload_device_ || stage.grads == Extent::Full)
    grads_ =
        EngineBuffer(memory, shared, StageLayout::elements(stage.grads, layout) * esize_, kLong);
  if (offload_device_) host_grads_ = EngineBuffer(memory, Place::Pinned, shard, kLong);
}

OptimRange ModelState::range(const OwnedRange &o) const {
  OptimRange r;
  r.count = o.count;
  r.weights = weights(o.index(weights_extent()));
  if (mixed_ && !offload_device_) {
    r.copy = params(o.index(stage_.params));
    r.copy_dtype = dtype_;
  }
  const size_t s = o.index(stage_.state);
  r.m = m_.empty() ? nullptr : m_.data<float>() + s;
  r.v = v_.empty() ? nullptr : v_.data<float>() + s;
  r.grads = offload_device_ ? host_grads(o.state) : grads(o.index(stage_.grads));
  r.grad_dtype = dtype_;
  return r;
}

void ModelState::zero_grads(EngineMemory &memory) {
  if (!grads_.empty()) memory.zero(grads_.place(), grads_.bytes(), grads_.size());
  if (!host_grads_.empty())
    memory.zero(host_grads_.place(), host_grads_.bytes(), host_grads_.size());
}

size_t ModelState::device_bytes() const {
  size_t total = 0;
  for (const EngineBuffer *b : {&params_, &master_, &m_, &v_, &grads_, &host_grads_})
    if (b->place() == Place::Device) total += b->size();
  return total;
}

size_t ModelState::shared_bytes() const {
  size_t total = 0;
  for (const EngineBuffer *b : {&params_, &master_, &m_, &v_, &grads_, &host_grads_})
    if (b->place() == Place::Shared) total += b->size();
  return total;
}

size_t ModelState::host_bytes() const {
  size_t total = 0;
  for (const EngineBuffer *b : {&params_, &master_, &m_, &v_, &grads_, &host_grads_})
    if (b->place() != Place::Device) total += b->size();
  return total;
}

}  // namespace zrt
