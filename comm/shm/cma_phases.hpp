// The single-copy phases of the shm backend: the data moves with process_vm_readv (cma.hpp)
// straight from a peer's buffer, and the shared channel carries only two small steps per
// phase, so a byte is copied once instead of into a slot and out again.
//
// step 0  every rank posts the address of its buffer (send or src) in its slot; once all
//         have, each reads what it needs from the peers' buffers:
//         reduce-scatter: the peers' parts of its own shard, kReduceChunkBytes at a time
//           into a cache-sized scratch, summed with its own part in rank order
//           (ordered_sum: the same bits as the staged path and every other backend);
//         all-gather: every peer's stream straight into its place in recv.
// step 1  every rank posts that it has finished reading, with a failure flag; once all
//         have, no peer reads this rank's buffer any more and the phase is complete. A
//         rank whose read failed still runs both steps (nobody hangs), and every rank's
//         operation then fails with the reason.
#pragma once

#include <sys/types.h>

#include <memory>
#include <vector>

#include "comm/shm/shm_channel.hpp"
#include "comm/shm/shm_phase.hpp"

namespace zrt {

// What the phases share with their backend; all pointers outlive the phases.
struct CmaPeers {
  ShmChannel *channel = nullptr;
  int rank = 0, size = 1;
  const std::vector<pid_t> *pids = nullptr;  // per rank
  std::vector<char> *scratch = nullptr;      // the reduce-scatter's, reused across operations
};

std::unique_ptr<Phase> make_cma_reduce_scatter(const CmaPeers &peers, ShmReduceScatterPlan plan);
std::unique_ptr<Phase> make_cma_all_gather(const CmaPeers &peers, ShmAllGatherPlan plan);

}  // namespace zrt
