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

size_t ModelState::offload_begin(const StageLayout &stage, const Layout &layout,
                                 const EngineSettings &settings, bool device) {
  const size_t shard = StageLayout::elements(stage.state, layout);
  if (!device || !settings.offload_optimizer) return shard;
  if (settings.offload_ratio >= 1) return 0;
  // Buckets are numbered in reduction order: the first ones' gradients reach the host
  // first, so the CPU has the longest time to update them during backward. Their slices
  // are the end of the shard (shard offsets follow the flat order, layout.hpp).
  const double want = settings.offload_ratio * static_cast<double>(layout.total());
  size_t taken = 0;
  for (const BucketInfo &b : layout.buckets()) {
    taken += b.length;
    if (static_cast<double>(taken) >= want) return b.shard_offset;
  }
  return 0;
}

std::vector<ModelState::Planned> ModelState::plan(const StageLayout &stage, const Layout &layout,
                                                  const EngineSettings &settings, bool device) {
  const size_t esize = dtype_size(settings.dtype);
  const bool offload = settings.offload_optimizer, offload_device = device && offload;
  const Place near = device ? Place::Device : Place::Host;
  const Place state_place = offload ? Place::Pinned : near;
  const size_t state = StageLayout::elements(stage.state, layout) * sizeof(float);
  // Offloaded, the state's elements from offload_begin() on are on the host and those
  // before it (partial offload) on the device.
  const size_t rest = offload_begin(stage, layout, settings, device),
               host = StageLayout::elements(stage.state, layout) - rest;
  // What the collectives read in place goes to the node's shared window, where it has one.
  const Place shared = device ? Place::Device : Place::Shared;
  std::vector<Planned> out;
  const Place params = offload_device && settings.offload_param ? Place::Pinned
                       : gathered(stage)                        ? shared
                                                                : near;
  out.push_back({Kind::Params, params, StageLayout::elements(stage.params, layout) * esize});
  auto state_buffer = [&](Kind kind, bool wanted_on_device) {
    if (!offload_device) {
      out.push_back({kind, state_place, state});
      return;
    }
    out.push_back({kind, Place::Pinned, host * sizeof(float)});
    if (rest > 0 && wanted_on_device) out.push_back({kind, Place::Device, rest * sizeof(float)});
  };
  // The device part of a partial offload keeps master weights only for 16-bit compute.
  if (settings.mixed() || offload_device) state_buffer(Kind::Master, settings.mixed());
  if (settings.has_momentum()) state_buffer(Kind::M, true);
  if (settings.two_moments()) state_buffer(Kind::V, true);
  // Offloaded, the reduced shard lives on the host; stages 0-1 reduce from a full device
  // buffer first; at stages 2-3 the device part of a partial offload has a device shard.
  if (!offload_device || stage.grads == Extent::Full)
    out.push_back({Kind::Grads, shared, StageLayout::elements(stage.grads, layout) * esize});
  else if (rest > 0)
    out.push_back({Kind::Grads, Place::Device, rest * esize});
  if (offload_device) out.push_back({Kind::HostGrads, Place::Pinned, host * esize});
  if (speculates(settings, device)) {
    const size_t copies = 1 + (settings.has_momentum() ? 1 : 0) + (settings.two_moments() ? 1 : 0);
    out.push_back({Kind::Saved, Place::Host, copies * host * sizeof(float)});
    if (settings.mixed()) out.push_back({Kind::Staging, Place::Pinned, host * esize});
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
  state_place_ = offload ? Place::Pinned : device ? Place::Device : Place::Host;
  state_elements_ = StageLayout::elements(stage.state, layout);
  host_begin_ = offload_begin(stage, layout, settings, device);
  // Long-lived state packs at one end of each pool; buckets and landing buffers go to the
  // other (gradient_reducer.hpp).
  for (const Planned &b : plan(stage, layout, settings, device)) {
    EngineBuffer buffer(memory, b.place, b.bytes, Lifetime::Long);
    const bool device_part = offload_device_ && b.place == Place::Device;
    switch (b.kind) {
      case Kind::Params:
        params_ = std::move(buffer);
        break;
      case Kind::Master:
        (device_part ? device_master_ : master_) = std::move(buffer);
        break;
      case Kind::M:
        (device_part ? device_m_ : m_) = std::move(buffer);
        break;
      case Kind::V:
        (device_part ? device_v_ : v_) = std::move(buffer);
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
  r.grad_dtype = dtype_;
  auto at = [](const EngineBuffer &b, size_t element) {
    return b.empty() ? nullptr : b.data<float>() + element;
  };
  if (offloaded(o)) {  // the CPU's part; the kernels' compute copy goes to the device later
    const size_t s = o.state - host_begin_;
    r.weights = master_.data<float>() + s;
    r.m = at(m_, s);
    r.v = at(v_, s);
    r.grads = host_grads(o.state);
    return r;
  }
  // On the device (the rest of a partial offload), or without offload.
  const EngineBuffer &master = offload_device_ ? device_master_ : master_;
  const EngineBuffer &m = offload_device_ ? device_m_ : m_, &v = offload_device_ ? device_v_ : v_;
  const size_t s = o.index(stage_.state);
  r.weights = mixed_ ? master.data<float>() + s : params_.data<float>() + o.index(stage_.params);
  if (mixed_) {
    r.copy = params(o.index(stage_.params));
    r.copy_dtype = dtype_;
  }
  r.m = at(m, s);
  r.v = at(v, s);
  r.grads = grads(o.index(stage_.grads));
  return r;
}

OptimRange ModelState::saved(const OwnedRange &o) const {
  OptimRange r;
  r.count = o.count;
  float *base = saved_.data<float>();
  const size_t s = o.state - host_begin_, stride = state_elements_ - host_begin_;
  r.weights = base + s;
  size_t next = 1;
  if (!m_.empty()) r.m = base + next++ * stride + s;
  if (!v_.empty()) r.v = base + next * stride + s;
  return r;
}

std::vector<const EngineBuffer *> ModelState::buffers() const {
  return {&params_,   &master_, &m_,          &v_,     &device_master_, &device_m_,
          &device_v_, &grads_,  &host_grads_, &saved_, &staging_};
}

void ModelState::zero_grads(EngineMemory &memory) {
  if (!grads_.empty()) memory.zero(grads_.place(), grads_.bytes(), grads_.size());
  if (!host_grads_.empty())
    memory.zero(host_grads_.place(), host_grads_.bytes(), host_grads_.size());
}

size_t ModelState::device_bytes() const {
  size_t total = 0;
  for (const EngineBuffer *b : buffers())
    if (b->place() == Place::Device) total += b->size();
  return total;
}

size_t ModelState::shared_bytes() const {
  size_t total = 0;
  for (const EngineBuffer *b : buffers())
    if (b->place() == Place::Shared) total += b->size();
  return total;
}

size_t ModelState::host_bytes() const {
  size_t total = 0;
  for (const EngineBuffer *b : buffers())
    if (b->place() != Place::Device) total += b->size();
  return total;
}

}  // namespace zrt
