// The zerort context the GPT-2 training tests share (tests/nn/mpi_kokkos_main.cpp), and model
// states in zerort's engine for a run's options.
#pragma once

#include <zerort/zerort.h>

#include <csignal>
#include <memory>
#include <string>

#include "mpi_context.hpp"
#include "train/trainer.hpp"
#include "train/training_types.hpp"
#include "training_fixture.hpp"

namespace gpt2::test {

/// The context over MPI_COMM_WORLD, and this rank's place in it.
inline zrt_context_h context() {
  return apps_test::context();
}
inline const World &world() {
  static const World w{apps_test::rank(), apps_test::size(), apps_test::comm(),
                       apps_test::context()};
  return w;
}

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

using apps_test::SignalAtStep;

}  // namespace gpt2::test
