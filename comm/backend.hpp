// The interface every communication backend implements. A backend starts collectives as
// BackendOps: small state machines that the communicator's progress engine steps until
// they complete (the model of Aluminum's progress.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "zerort/defs.h"

namespace zrt {

class Communicator;

enum class CollKind { ReduceScatter = 1, AllGather = 2, AllReduce = 3, Broadcast = 4 };
const char *coll_name(CollKind kind);

struct CollArgs {
  CollKind kind = CollKind::AllReduce;
  const void *send = nullptr;
  void *recv = nullptr;
  size_t count = 0;  // total elements (see the padding rule in zerort/comm.h)
  zrt_dtype_t dtype = ZRT_DTYPE_FP32;
  zrt_op_t op = ZRT_OP_SUM;
  int root = 0;
  uint64_t seq = 0;  // per-communicator sequence number, for messages

  // "all_reduce #12 (4096 x fp32, sum)"
  std::string describe() const;
};

class BackendOp {
 public:
  virtual ~BackendOp() = default;
  // Advances the operation; returns true once it is complete. Throws Error on failure.
  virtual bool step() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char *name() const = 0;
  // Starts args on the communicator; args were validated and agreed by the caller.
  virtual std::unique_ptr<BackendOp> start(const CollArgs &args) = 0;
};

}  // namespace zrt
