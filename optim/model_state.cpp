#include "optim/model_state.hpp"

#include "comm/dtype.hpp"

namespace zrt {

ModelState::ModelState(Pool &pool, const StageLayout &stage, const Layout &layout,
                       const EngineSettings &settings)
    : stage_(stage),
      dtype_(settings.dtype),
      esize_(dtype_size(settings.dtype)),
      mixed_(settings.mixed()) {
  // Long-lived state packs at one end of the pool; buckets and landing buffers go to the
  // other (gradient_reducer.hpp).
  const Lifetime kLong = Lifetime::Long;
  const size_t state = StageLayout::elements(stage.state, layout) * sizeof(float);
  params_ = HostBuffer(pool, StageLayout::elements(stage.params, layout) * esize_, kLong);
  if (mixed_) master_ = HostBuffer(pool, state, kLong);
  if (settings.has_momentum()) m_ = HostBuffer(pool, state, kLong);
  if (settings.two_moments()) v_ = HostBuffer(pool, state, kLong);
  grads_ = HostBuffer(pool, StageLayout::elements(stage.grads, layout) * esize_, kLong);
}

OptimRange ModelState::range(const OwnedRange &o) const {
  OptimRange r;
  r.count = o.count;
  r.weights = weights(o.index(weights_extent()));
  if (mixed_) {
    r.copy = params(o.index(stage_.params));
    r.copy_dtype = dtype_;
  }
  const size_t s = o.index(stage_.state);
  r.m = m_.empty() ? nullptr : m_.data<float>() + s;
  r.v = v_.empty() ? nullptr : v_.data<float>() + s;
  r.grads = grads(o.index(stage_.grads));
  r.grad_dtype = dtype_;
  return r;
}

}  // namespace zrt
