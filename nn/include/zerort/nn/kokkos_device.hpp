// Kokkos on the rank's GPU: whether this process can compute on CUDA at all, and Kokkos'
// start on the GPU zerort placed the rank near, so the model's kernels and the engine's
// device buffers are on one device.
#pragma once

#include <zerort/context.h>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace zrt::nn {

/// Empty where the model's execution space can run here: always in a host build; in a Kokkos
/// CUDA build when a CUDA driver new enough for this build's runtime and a GPU are present.
/// Otherwise why not, for the user ("this build computes on CUDA 13.0, but the driver ...").
/// Local: every rank decides alike on alike nodes; each says it for its own node.
std::string cuda_unusable();

/// The CUDA device the rank's model computes on: zerort's choice for the rank (the GPU its
/// cores are nearest, zrt_context_query's gpu), else device 0, where zerort's device memory
/// then is. -1 in a host build.
int kokkos_device_for(zrt_context_h context);

/// The rank's GPU's free and total bytes (cudaMemGetInfo); false in a host build.
bool device_memory(int64_t &free_bytes, int64_t &total_bytes);

/// Bytes in use on the rank's GPU as the driver counts them (cudaMemGetInfo: every process's
/// allocations, the CUDA context, cuBLAS' workspace); -1 in a host build.
int64_t device_used_bytes();

/// Starts Kokkos for a program that has its zerort context: on the context's GPU in a CUDA
/// build (Kokkos' own settings from its environment otherwise). Kokkos ends when the result
/// is destroyed; destroy it before zrt_finalize's caller returns to MPI_Finalize.
std::unique_ptr<Kokkos::ScopeGuard> start_kokkos(zrt_context_h context, int &argc, char **argv);
/// Kokkos::initialize as start_kokkos, for a library that starts Kokkos on a program's
/// behalf (zrt_model_create) and ends it itself.
void initialize_kokkos(zrt_context_h context);

}  // namespace zrt::nn
