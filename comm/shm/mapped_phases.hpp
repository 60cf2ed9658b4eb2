// Collectives on buffers from zrt_comm_mem_alloc (shared_segments.hpp): every rank's
// buffer is mapped in every peer, so a reduce-scatter sums its shard straight from the
// peers' send buffers and an all-gather copies straight from their sources: one pass over
// the data, where the staged path first copies it into the channel's slots.
//
// Whether the buffers are shared is known only to each rank, and all ranks must agree on
// the path before moving data, so a large operation (comm.shm.direct_bytes and up) runs:
//
// header    each rank posts where its buffers lie (segment and offset, or "private") in
//           its slot; once all have, every rank reads the same posts and chooses the same
//           path per phase: direct when every rank's buffer is shared, else the staged or
//           single-copy phase it wraps;
// phases    the wrapped phases' steps; a direct phase moves its data in them too (reading
//           peers, writing only its own output) and leaves the slots alone; the phase
//           after a direct reduce-scatter starts once every peer has finished it;
// barrier   one empty step, produced only after this rank has read everything: once it is
//           consumed, no peer reads this rank's buffers any more and the operation may
//           complete.
//
// Both paths run the same number of steps, so the channel stays in step whatever is chosen.
// The header and the barrier cost two extra steps (a few microseconds) on the staged path.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "comm/shm/shared_segments.hpp"
#include "comm/shm/shm_channel.hpp"
#include "comm/shm/shm_phase.hpp"

namespace zrt {

struct MappedPeers {
  ShmChannel *channel = nullptr;
  int rank = 0, size = 1;
  const SharedSegments *segments = nullptr;
  std::atomic<uint64_t> *direct_phases = nullptr;  // counts the phases that ran direct
};

// The phases of one operation: the header, each plan's phase wrapped around the phase it
// falls back to (staged or single copy), and the barrier.
std::vector<std::unique_ptr<Phase>> make_mapped_phases(
    const MappedPeers &peers, const std::optional<ShmReduceScatterPlan> &rs,
    std::unique_ptr<Phase> rs_fallback, const std::optional<ShmAllGatherPlan> &ag,
    std::unique_ptr<Phase> ag_fallback);

}  // namespace zrt
