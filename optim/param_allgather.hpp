// The all-gathers of parameters outside stage 3's cache (param_gatherer.hpp): the updated
// parameters after the optimizer (stages 1-2), and one parameter's fp32 master value
// assembled from its owners (zrt_param_get).
#pragma once

#include <vector>

#include "optim/model_state.hpp"
#include "optim/owned_request.hpp"

namespace zrt {

// Stages 1-2: every rank's updated slices into the full parameter buffer, in place, bucket
// by bucket, with at most window_bytes in flight (allgather_bucket_size), after the
// engine's stream has written them. Collective.
void all_gather_updated_params(Communicator &comm, EngineMemory &memory, const Layout &layout,
                               ModelState &state, zrt_dtype_t dtype, size_t window_bytes,
                               CommStats &stats, int64_t step);

// The fp32 weights of `param`'s group gathered from the slice owners (the whole group, so
// the result starts at the group's first element), in host memory. Collective.
std::vector<float> gather_param_weights(Communicator &comm, EngineMemory &memory,
                                        const Layout &layout, const ModelState &state,
                                        const ParamInfo &param, CommStats &stats, int64_t step);

}  // namespace zrt
