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
  std::vector<size_t> bytes;
  for (const Planned &b : plan(stage, layout, settings, false))
    if (b.place == Place::Shared) bytes.push_back(b.bytes);
  return bytes;
}

std::vector<ModelState::Planned> ModelState::plan(const StageLayout &stage, const Layout &layout,
                                                  const EngineSettings &settings, bool device) {
  const size_t esize = dtype_size(settings.dtype);
  const bool offload = settings.offload_optimizer, offload_device = device && offload;
  const Place near = device ? Place::Device : Place::Host;
  const Place state_place = offload ? Place::Pinned : near;
  const size_t state = StageLayout::elements(stage.state, layout) * sizeof(float);
  const size_t shard = StageLayout::elements(Extent::Shard, layout) * esize;
  // What the collectives read in place goes to the node's shared window, where it has one.
  const Place shared = device ? Place::Device : Place::Shared;
  std::vector<Planned> out;
  out.push_back({Kind::Params, gathered(stage) ? shared : near,
                 StageLayout::elements(stage.params, layout) * esize});
  if (settings.mixed() || offload_device) out.push_back({Kind::Master, state_place, state});
  if (settings.has_momentum()) out.push_back({Kind::M, state_place, state});
  if (settings.two_moments()) out.push_back({Kind::V, state_place, state});
  // Offloaded, the reduced shard lives on the host; stages 0-1 reduce from a full device
  // buffer first.
  if (!offload_device || stage.grads == Extent::Full)
    out.push_back({Kind::Grads, shared, StageLayout::elements(stage.grads, layout) * esize});
  if (offload_device) out.push_back({Kind::HostGrads, Place::Pinned, shard});
  return out;
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
  state_place_ = offload ? Place::Pinned : device ? Place::Device : Place::Host;
  // Long-lived state packs at one end of each pool; buckets and landing buffers go to the
  // other (gradient_reducer.hpp).
  for (const Planned &b : plan(stage, layout, settings, device)) {
    EngineBuffer buffer(memory, b.place, b.bytes, Lifetime::Long);
    switch (b.kind) {
      case Kind::Params:
        params_ = std::move(buffer);
        break;
      case Kind::Master:
        master_ = std::move(buffer);
        break;
      case Kind::M:
        m_ = std::move(buffer);
        break;
      case Kind::V:
        v_ = std::move(buffer);
        break;
      case Kind::Grads:
        grads_ = std::move(buffer);
        break;
      case Kind::HostGrads:
        host_grads_ = std::move(buffer);
        break;
    }
  }
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
