// The padding rule of zerort/comm.h: count elements over n ranks in contiguous shards of
// ceil(count / n); rank r owns [r * shard, min((r + 1) * shard, count)).
#pragma once

#include <algorithm>
#include <cstddef>

namespace zrt {

struct Shard {
  size_t offset = 0;  // first element (may exceed count for trailing empty shards)
  size_t length = 0;  // valid elements
  size_t shard = 0;   // padded shard size, equal on every rank
};

inline Shard shard_range(size_t count, int nranks, int rank) {
  Shard s;
  const size_t n = static_cast<size_t>(nranks);
  s.shard = (count + n - 1) / n;
  s.offset = s.shard * static_cast<size_t>(rank);
  s.length = s.offset >= count ? 0 : std::min(s.shard, count - s.offset);
  return s;
}

}  // namespace zrt
