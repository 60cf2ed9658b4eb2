// Whether an engine's buffers fit before its commit allocates them. Otherwise a job in a
// memory cgroup (a Slurm job's --mem) grows until the kernel kills it without a word, and a
// pool's "out of memory" names neither the model's need nor what would make it fit.
//
// The need is the plan of the commit (EnginePlan::planned_memory: the buffers the engine
// is about to allocate, to the byte). It is compared with:
//  - what this rank may still use under its memory limits (memory/memory_limits.hpp): its
//    share of the node's physical memory and of its cgroup's limit, and RLIMIT_DATA, less
//    what the process uses now; RLIMIT_AS counts the pools' reservations, which the next
//    check covers;
//  - what each pool the buffers come from may still hold (host, pinned host, device): its
//    limit less its live bytes.
// The message names the need, the limit and what would make it fit: a higher ZeRO stage
// (with the need at each), more ranks, the optimizer state offloaded, or a larger limit.
#pragma once

#include "memory/memory_part.hpp"
#include "optim/engine_settings.hpp"
#include "optim/layout.hpp"

namespace zrt {

// Throws Error(ZRT_ERR_OUT_OF_MEMORY) when the buffers of an engine with these settings,
// laid out as `layout` over `nranks` ranks, on the device or not, with a node-shared window
// over window_ranks ranks (0: none), do not fit. Local; reads /proc/self/status and makes
// the pools the buffers come from.
void check_engine_fits(MemoryPart &memory, const EngineSettings &settings, const Layout &layout,
                       int nranks, bool device, int window_ranks);

}  // namespace zrt
