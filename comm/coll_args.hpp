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

// What a collective carries, where its poster knows: the engine says which bucket or group
// of its flat buffer, for what, at which step. The cross-rank argument check compares it
// with the arguments (comm/arg_check.hpp), so ranks that exchange different data of the same
// size (a stage-3 gather of parameter a on one rank and of b on another) fail with
// ZRT_ERR_MISMATCH instead of mixing the two.
struct CollPurpose {
  enum class What : uint8_t {
    None = 0,        // not said (a program's own collective)
    GradientBucket,  // the reduction of a gradient bucket
    ParamGather,     // stage 3: the gather of a parameter group before its use
    ParamAllGather,  // stages 1-2: the all-gather of updated parameters after the step
    WeightsGather,   // zrt_param_get's gather of fp32 weights
  };
  What what = What::None;
  int64_t index = -1;  // the bucket (for a group, its first bucket)
  int64_t step = -1;   // the engine's step count when it was posted
};
// "the stage-3 gather of bucket 3 at step 5"; "" for What::None.
std::string purpose_text(const CollPurpose &purpose);

struct CollArgs {
  CollKind kind = CollKind::AllReduce;
  const void *send = nullptr;
  void *recv = nullptr;
  size_t count = 0;  // total elements (see the padding rule in zerort/comm.h)
  zrt_dtype_t dtype = ZRT_DTYPE_FP32;
  zrt_op_t op = ZRT_OP_SUM;
  int root = 0;
  uint64_t seq = 0;  // per-communicator sequence number, for messages
  CollPurpose purpose;
  // The program reads recv again only after much else (stages 1-2's all-gather of the
  // updated parameters, which the next forward reads; stages 2-3's first reduce-scatter into
  // the gradient shard, which the norm reads after backward): a backend that copies or sums on
  // the CPU may write recv around the cache (the shm backend's mapped all-gather and
  // reduce-scatter do, streaming_copy.hpp). A hint: results are the same either way.
  bool recv_cold = false;
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
