// ZeRO-Offload's CPU step during backward (engine.offload_step during_backward).
//
// The CPU optimizer needs the global gradient norm (clipping) and the agreement that no
// gradient is inf or NaN (the skipped step) before it may update anything, and both are
// known only once the last bucket is reduced: run after backward, the update of the whole
// shard is exposed. Here each bucket's owned range is updated as soon as its reduced
// gradient has reached the host, on a worker thread of its own (using the optimizer's
// threads), while backward goes on: with the step's learning rate and loss scale, without
// clipping and as if no step were skipped. Before it updates a range the worker saves the
// range's fp32 weights and moments, and it computes the range's sum of squares (and
// non-finite flag) on the way, which the step's norm then uses instead of reading the
// gradients again.
//
// At zrt_engine_step the engine agrees on the norm and the overflow as usual and then:
//  - commits: clipping left the gradient alone, no rank skips, and the rate, scale, step
//    and weight decays are those the worker used: the updated ranges go to the device;
//  - or rolls back: the saved copies are restored, and the step skips or runs the update
//    after backward. Either way the result is the after_backward step's bit for bit (the
//    kernels are elementwise and deterministic; the sums are the same blocks in the same
//    order).
// The mixed-precision copies the kernels write go to a pinned staging shard, not to the
// parameters: the program may still read those during backward.
//
// Not thread-safe: one engine thread calls it; the worker is its own.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "memory/device.hpp"
#include "optim/optimizer_step.hpp"

namespace zrt {

class SpeculativeStep {
 public:
  // What one update depends on besides the gradients: equal keys give equal results.
  struct Key {
    float grad_scale = 0;
    double lr = 0;
    int64_t step = 0;
    uint64_t decay_version = 0;
    bool operator==(const Key &) const = default;
  };

  // The references must outlive this object. Local.
  SpeculativeStep(OptimizerStep &optimizer, ModelState &state, const EngineSettings &settings,
                  bool check_non_finite);
  ~SpeculativeStep();  // finishes the updates queued, then stops the worker
  SpeculativeStep(const SpeculativeStep &) = delete;
  SpeculativeStep &operator=(const SpeculativeStep &) = delete;

  // The reduced gradient of `bucket` is on its way to this rank's host shard: `arrived`
  // completes when it is there. Queues the update of the owned ranges of that bucket with
  // the key (the first bucket's key is the step's; the worker runs every update of a step
  // with it).
  void bucket_landed(int bucket, Event arrived, const Key &key);
  // Whether this step's updates have begun (a bucket landed since the last commit or
  // roll_back).
  bool begun() const {
    std::lock_guard lock(mutex_);
    return begun_;
  }
  // Waits until every queued update is done. Returns the seconds the caller waited.
  double finish();
  // After finish(): whether every offloaded owned range was updated with `key`, so that
  // commit() gives the step's result for them (a partial offload's device ranges are
  // updated by the step).
  bool complete(const Key &key) const;
  // After finish(): this rank's sums of squares and non-finite flag of the owned ranges'
  // gradients (valid where complete()).
  const std::vector<double> &range_sums() const { return sums_; }
  bool non_finite() const;
  // The updated ranges to where the program reads the parameters (OptimizerStep::
  // copy_back), on the engine's stream. Then the next step begins.
  void commit();
  // Restores every range changed since the last commit from its saved copy. Then the next
  // step begins.
  void roll_back();
  // The CPU's time on the updates since the last call, in seconds.
  double take_cpu_seconds();

 private:
  struct Task {
    size_t owned;  // index in optimizer_.owned()
    Event arrived;
  };
  void work();
  void update(size_t owned);
  void reset();

  OptimizerStep &optimizer_;
  ModelState &state_;
  const bool mixed_;
  const bool check_non_finite_;
  const size_t esize_;
  std::vector<std::vector<size_t>> owned_of_bucket_;  // the CPU's ranges of each bucket
  std::vector<char> cpu_;                             // per owned range: offloaded, so updated here

  // Shared with the worker, under mutex_.
  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Task> queue_;
  bool busy_ = false, stop_ = false;
  Key key_;
  bool begun_ = false;
  // Per owned range: saved and (possibly part) changed; updated with key_ in full; its
  // sum of squares and non-finite flag.
  std::vector<char> changed_, updated_, non_finite_;
  std::vector<double> sums_;
  std::string failure_;  // the worker's first error: the step runs after backward instead
  double cpu_seconds_ = 0;

  std::thread worker_;
};

}  // namespace zrt
