// The memory spaces zerort allocates from, and the lifetimes that decide where in a pool
// an allocation goes. The C enums (zerort/memory.h) convert to these after a range check.
#pragma once

#include <cstddef>
#include <string>

#include "zerort/memory.h"

namespace zrt {

enum class MemorySpace { Host = 0, PinnedHost = 1, Device = 2 };
inline constexpr int kMemorySpaces = 3;

// Long-lived allocations (parameters, gradients, optimizer state, checkpointed
// activations) pack from the low end of a pool; transient ones (buckets, activations,
// workspace) from the high end, so the two do not interleave and fragment each other.
enum class Lifetime { Long = 0, Transient = 1 };

const char *space_name(MemorySpace space);  // "host", "pinned_host", "device"
const char *lifetime_name(Lifetime lifetime);

// Range-checked conversions from the C enums; throw Error(ZRT_ERR_INVALID_ARGUMENT)
// naming the argument and the accepted values.
MemorySpace space_from_c(zrt_memory_space_t space, const char *argument);
Lifetime lifetime_from_c(zrt_lifetime_t lifetime, const char *argument);

}  // namespace zrt
