#include "memory/arena.hpp"

#include <algorithm>

#include "memory/reserving_arena.hpp"
#include "memory/segmented_arena.hpp"

namespace zrt {

Arena::Arena(Resource &resource, BlockList &blocks, const Limits &limits)
    : resource_(resource),
      blocks_(blocks),
      limits_(limits),
      unit_(std::max(resource.granularity(), limits.alignment)) {}

const Region *Arena::region_of(uintptr_t p) const {
  for (const auto &r : regions_)
    if (r->contains(p)) return r.get();
  return nullptr;
}

std::unique_ptr<Arena> make_arena(Resource &resource, BlockList &blocks,
                                  const Arena::Limits &limits) {
  if (resource.reserves()) return std::make_unique<ReservingArena>(resource, blocks, limits);
  return std::make_unique<SegmentedArena>(resource, blocks, limits);
}

}  // namespace zrt
