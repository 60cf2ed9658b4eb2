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

bool ModelState::speculates(const EngineSettings &settings, bool device) {
  return device && settings.offload_optimizer && settings.offload_during_backward &&
         settings.optimizer != ZRT_OPTIMIZER_LAMB;
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
  const Place params = offload_device && settings.offload_param ? Place::Pinned
                       : gathered(stage)                        ? shared
                                                                : near;
  out.push_back({Kind::Params, params, StageLayout::elements(stage.params, layout) * esize});
  if (settings.mixed() || offload_device) out.push_back({Kind::Master, state_place, state});
  if (settings.has_momentum()) out.push_back({Kind::M, state_place, state});
  if (settings.two_moments()) out.push_back({Kind::V, state_place, state});
  // Offloaded, the reduced shard lives on the host; stages 0-1 reduce from a full device
  // buffer first.
  if (!offload_device || stage.grads == Extent::Full)
    out.push_back({Kind::Grads, shared, StageLayout::elements(stage.grads, layout) * esize});
  if (offload_device) out.push_back({Kind::HostGrads, Place::Pinned, shard});
  if (speculates(settings, device)) {
    const size_t copies = 1 + (settings.has_momentum() ? 1 : 0) + (settings.two_moments() ? 1 : 0);
    out.push_back({Kind::Saved, Place::Host, copies * state});
    if (settings.mixed()) out.push_back({Kind::Staging, Place::Pinned, shard});
  }
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
  state_elements_ = StageLayout::elements(stage.state, layout);
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
      case Kind::Saved:
        saved_ = std::move(buffer);
        break;
      case Kind::Staging:
        staging_ = std::move(buffer);
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

OptimRange ModelState::saved(const OwnedRange &o) const {
  OptimRange r;
  r.count = o.count;
  const size_t s = o.index(stage_.state);
  float *base = saved_.data<float>();
  r.weights = base + s;
  size_t next = 1;
  if (!m_.empty()) r.m = base + next++ * state_elements_ + s;
  if (!v_.empty()) r.v = base + next * state_elements_ + s;
  return r;
}

void ModelState::zero_grads(EngineMemory &memory) {
  if (!grads_.empty()) memory.zero(grads_.place(), grads_.bytes(), grads_.size());
  if (!host_grads_.empty())
    memory.zero(host_grads_.place(), host_grads_.bytes(), host_grads_.size());
}

size_t ModelState::device_bytes() const {
  size_t total = 0;
  for (const EngineBuffer *b :
       {&params_, &master_, &m_, &v_, &grads_, &host_grads_, &saved_, &staging_})
    if (b->place() == Place::Device) total += b->size();
  return total;
}

size_t ModelState::shared_bytes() const {
  size_t total = 0;
  for (const EngineBuffer *b :
       {&params_, &master_, &m_, &v_, &grads_, &host_grads_, &saved_, &staging_})
    if (b->place() == Place::Shared) total += b->size();
  return total;
}

size_t ModelState::host_bytes() const {
  size_t total = 0;
  for (const EngineBuffer *b :
       {&params_, &master_, &m_, &v_, &grads_, &host_grads_, &saved_, &staging_})
    if (b->place() != Place::Device) total += b->size();
  return total;
}

}  // namespace zrt
