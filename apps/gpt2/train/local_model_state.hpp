// TEMPORARY: model states held by the program itself until zerort's engine (engine.h) is
// implemented; then zrt-gpt2 creates an engine-backed ModelState instead and this file
// goes. Parameters, gradients and AdamW's moments are full copies on every rank (ZeRO
// stage 0, plain data parallelism): gradients are averaged with one blocking zerort
// all-reduce of the contiguous gradient buffer after backward, then every rank applies
// the same AdamW update.
#pragma once

#include <zerort/zerort.h>

#include <memory>

#include "model/config.hpp"
#include "train/model_state.hpp"

namespace gpt2 {

/// @p comm may be null (one process, no collectives).
std::unique_ptr<ModelState> make_local_model_state(const Gpt2Config &config,
                                                   const OptimizerConfig &optimizer,
                                                   zrt_comm_h comm);

}  // namespace gpt2
