#include "optim/speculative_step.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>

#include "comm/dtype.hpp"
#include "runtime/log.hpp"

namespace zrt {

SpeculativeStep::SpeculativeStep(OptimizerStep &optimizer, ModelState &state,
                                 const EngineSettings &settings, bool check_non_finite)
    : optimizer_(optimizer),
      state_(state),
      mixed_(settings.mixed()),
      check_non_finite_(check_non_finite),
      esize_(dtype_size(settings.dtype)) {
  const std::vector<OwnedRange> &owned = optimizer.owned();
  cpu_.assign(owned.size(), 0);
  for (size_t i = 0; i < owned.size(); ++i) {
    // A partial offload's device ranges are updated at the step, on the device.
    if (!state.offloaded(owned[i])) continue;
    cpu_[i] = 1;
    const size_t b = static_cast<size_t>(owned[i].bucket);
    if (owned_of_bucket_.size() <= b) owned_of_bucket_.resize(b + 1);
    owned_of_bucket_[b].push_back(i);
  }
  updated_.assign(owned.size(), 0);
  changed_.assign(owned.size(), 0);
  non_finite_.assign(owned.size(), 0);
  sums_.assign(owned.size(), 0.0);
  worker_ = std::thread([this] { work(); });
}

SpeculativeStep::~SpeculativeStep() {
  {
    std::lock_guard lock(mutex_);
    queue_.clear();  // updates nobody will commit; the one running finishes
    stop_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

void SpeculativeStep::bucket_landed(int bucket, Event arrived, const Key &key) {
  if (static_cast<size_t>(bucket) >= owned_of_bucket_.size()) return;  // nothing owned there
  {
    std::lock_guard lock(mutex_);
    if (!begun_) {
      key_ = key;
      begun_ = true;
    }
    for (size_t i : owned_of_bucket_[static_cast<size_t>(bucket)])
      queue_.push_back({i, arrived});
  }
  wake_.notify_one();
}

void SpeculativeStep::work() {
  for (;;) {
    Task task;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing is left to do
      task = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    try {
      task.arrived.synchronize();  // the gradient is in the host shard
      update(task.owned);
    } catch (const std::exception &e) {
      // The range stays as it was (not marked updated): the step runs after backward and
      // meets the failure itself where it is agreed.
      std::lock_guard lock(mutex_);
      if (failure_.empty()) failure_ = e.what();
      log::debug("engine: the speculative CPU step stopped: {}", e.what());
    }
    {
      std::lock_guard lock(mutex_);
      busy_ = false;
      if (queue_.empty()) idle_.notify_all();
    }
  }
}

void SpeculativeStep::update(size_t owned) {
  const auto t0 = std::chrono::steady_clock::now();
  Key key;
  {
    std::lock_guard lock(mutex_);
    if (changed_[owned]) return;  // landed twice (an abandoned micro-step's drain)
    key = key_;
  }
  const OwnedRange &o = optimizer_.owned()[owned];
  const bool bad = check_non_finite_ && optimizer_.range_non_finite(owned);
  const double sum = optimizer_.range_sum_squares(owned);
  OptimRange r = state_.range(o);
  if (mixed_) {
    r.copy = state_.staging(o);
    r.copy_dtype = r.grad_dtype;
  }
  const OptimRange saved = state_.saved(o);
  // The whole range is saved before any of it changes, so that a failure part way through
  // the update still rolls back to the right values; the range counts as changed from then.
  optimizer_.update_range(owned, r, [&](int, const OptimRange &piece) {
    const size_t at = static_cast<size_t>(piece.weights - r.weights), bytes = piece.count * 4;
    std::memcpy(saved.weights + at, piece.weights, bytes);
    if (piece.m != nullptr) std::memcpy(saved.m + at, piece.m, bytes);
    if (piece.v != nullptr) std::memcpy(saved.v + at, piece.v, bytes);
  });
  {
    std::lock_guard lock(mutex_);
    changed_[owned] = 1;
  }
  optimizer_.update_range(owned, r, optimizer_.host_kernel(key.grad_scale, key.lr, key.step));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard lock(mutex_);
  updated_[owned] = 1;
  non_finite_[owned] = bad ? 1 : 0;
  sums_[owned] = sum;
  cpu_seconds_ += seconds;
}

double SpeculativeStep::finish() {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool SpeculativeStep::complete(const Key &key) const {
  std::lock_guard lock(mutex_);
  if (!begun_ || !failure_.empty() || !(key_ == key)) return false;
  for (size_t i = 0; i < updated_.size(); ++i)
    if (cpu_[i] && !updated_[i]) return false;
  return true;
}

bool SpeculativeStep::non_finite() const {
  for (char f : non_finite_)
    if (f) return true;
  return false;
}

void SpeculativeStep::commit() {
  const std::vector<OwnedRange> &owned = optimizer_.owned();
  for (size_t i = 0; i < owned.size(); ++i)
    if (updated_[i]) optimizer_.copy_back(owned[i], mixed_ ? state_.staging(owned[i]) : nullptr);
  reset();
}

void SpeculativeStep::roll_back() {
  const std::vector<OwnedRange> &owned = optimizer_.owned();
  for (size_t i = 0; i < owned.size(); ++i) {
    if (!changed_[i]) continue;
    const OptimRange r = state_.range(owned[i]), saved = state_.saved(owned[i]);
    const size_t bytes = r.count * 4;
    std::memcpy(r.weights, saved.weights, bytes);
    if (r.m != nullptr) std::memcpy(r.m, saved.m, bytes);
    if (r.v != nullptr) std::memcpy(r.v, saved.v, bytes);
  }
  reset();
}

void SpeculativeStep::reset() {
  std::lock_guard lock(mutex_);
  begun_ = false;
  failure_.clear();
  std::fill(updated_.begin(), updated_.end(), 0);
  std::fill(changed_.begin(), changed_.end(), 0);
  std::fill(non_finite_.begin(), non_finite_.end(), 0);
  std::fill(sums_.begin(), sums_.end(), 0.0);
}

double SpeculativeStep::take_cpu_seconds() {
  std::lock_guard lock(mutex_);
  const double s = cpu_seconds_;
  cpu_seconds_ = 0;
  return s;
}

}  // namespace zrt
