// The nccl backend: collectives on CUDA device buffers with NCCL, ordered on a stream of
// the communicator's own. The unique id travels over MPI; every rank uses the GPU the
// topology chose for it (the nearest one), or local rank modulo the device count.
//
// Padding: NCCL's reduce-scatter and all-gather move equal shards, so a count the rank
// count does not divide goes through a padded device buffer (zeros in the padding).
// Deterministic mode: NCCL's own reduction order is not rank order, so each rank receives
// every rank's piece of its shard (grouped ncclSend/ncclRecv) and a kernel sums them in
// rank order in fp32 (fp64 for fp64), rounding once: the bits of every other backend.
// Completion is a CUDA event the progress engine polls; a watchdog timeout aborts the
// NCCL communicator (ncclCommAbort), the only way to free a stuck NCCL kernel.
#pragma once

#include <memory>

#include "comm/backend.hpp"

namespace zrt {

// Collective over group.comm. Throws Error(ZRT_ERR_NOT_SUPPORTED) on every rank when a
// rank has no usable CUDA device, Error(ZRT_ERR_BACKEND) when NCCL fails to start.
std::unique_ptr<Backend> make_nccl_backend(const BackendGroup &group);

}  // namespace zrt
