// The zerort context the GPT-2 training tests share (mpi_kokkos_main.cpp), and model states
// in zerort's engine for a run's options.
#pragma once

#include <zerort/zerort.h>

#include <csignal>
#include <memory>
#include <string>

#include "train/trainer.hpp"
#include "train/training_types.hpp"

namespace gpt2::test {

/// The context over MPI_COMM_WORLD, and this rank's place in it.
zrt_context_h context();
const World &world();

struct StateSpec {
  int stage = 2;
  zrt_dtype_t dtype = ZRT_DTYPE_FP32;
  bool deterministic = false;
  // Small buckets, so that d2 has several and reductions overlap backward.
  int64_t bucket_bytes = 1 << 20;
  zrt_engine_memory_t memory = ZRT_ENGINE_MEMORY_HOST;
};

/// An engine for @p o's model and optimizer (collective over @p ctx).
inline std::unique_ptr<ModelState> engine_state(const TrainOptions &o, const StateSpec &s = {},
                                                zrt_context_h ctx = context()) {
  EngineOptions e;
  e.stage = s.stage;
  e.dtype = s.dtype;
  e.deterministic = s.deterministic;
  e.optimizer = o.optimizer;
  e.lr = o.lr.max_lr;
  e.reduce_bucket_bytes = s.bucket_bytes;
  e.memory = s.memory;
  return make_engine_model_state(ctx, parameter_layout(o.config), e);
}

/// Model states that raise SIGUSR1 during micro-step @p at (1-based), as Slurm would before
/// a time limit.
class SignalAtStep final : public ModelState {
 public:
  SignalAtStep(std::unique_ptr<ModelState> inner, int at) : inner_(std::move(inner)), at_(at) {}
  ParameterStore<float> &store() override { return inner_->store(); }
  double loss_scale() const override { return inner_->loss_scale(); }
  StepReport step(double lr) override {
    if (++steps_ == at_) std::raise(SIGUSR1);
    return inner_->step(lr);
  }
  StateMemory memory() const override { return inner_->memory(); }
  int64_t stage0_bytes() const override { return inner_->stage0_bytes(); }
  void save(const std::string &path, const std::string &metadata) override {
    inner_->save(path, metadata);
  }
  void load(const std::string &path) override { inner_->load(path); }
  std::string describe() const override { return inner_->describe(); }
  ModelState &inner() { return *inner_; }

 private:
  std::unique_ptr<ModelState> inner_;
  int at_, steps_ = 0;
};

}  // namespace gpt2::test
