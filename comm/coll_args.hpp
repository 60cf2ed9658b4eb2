// One collective's arguments as the communicator, the registry and the backends see them,
// and how they are written in messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "memory/device.hpp"
#include "zerort/defs.h"

namespace zrt {

enum class CollKind { ReduceScatter = 1, AllGather = 2, AllReduce = 3, Broadcast = 4 };
const char *coll_name(CollKind kind);  // "reduce_scatter"

struct CollArgs {
  CollKind kind = CollKind::AllReduce;
  const void *send = nullptr;
  void *recv = nullptr;
  size_t count = 0;  // total elements (see the padding rule in zerort/comm.h)
  zrt_dtype_t dtype = ZRT_DTYPE_FP32;
  zrt_op_t op = ZRT_OP_SUM;
  int root = 0;
  uint64_t seq = 0;  // per-communicator sequence number, for messages
  // Device buffers: the collective reads them only once this completes (an event of the
  // stream that produced them); empty: they are ready now. Host backends ignore it.
  Event ready;

  // "all_reduce #12 (4096 x fp32, sum)"
  std::string describe() const;
  // "all_reduce #12 (4096 x fp32 = 16 KiB, sum)": with the size (format_bytes), for the
  // watchdog
  std::string describe_with_bytes() const;
};

}  // namespace zrt
