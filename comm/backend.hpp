// The interface every communication backend implements. A backend starts collectives as
// BackendOps: small state machines that the communicator's progress engine steps until
// they complete (the model of Aluminum's progress.cpp). Backends are listed, created and
// chosen in one place, comm/registry.cpp.
#pragma once

#include <mpi.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "comm/coll_args.hpp"
#include "runtime/gpu/memory_kind.hpp"
#include "zerort/defs.h"

namespace zrt {

class Context;

// Memory a backend reads in place from every rank (zrt_comm_mem_alloc), where it has such.
class SharedBuffers {
 public:
  virtual ~SharedBuffers() = default;
  // Both collective over the backend's group; they fail on every rank together. The
  // caller (comm/comm_memory.hpp) has checked the arguments on every rank.
  virtual void *allocate(size_t bytes) = 0;
  virtual void free(void *pointer) = 0;
  // Local: the number of the allocation that allocate returned as pointer, counted from 0
  // in allocation order (the same on every rank), or kNone.
  static constexpr uint64_t kNone = ~uint64_t{0};
  virtual uint64_t number_of(const void *pointer) const = 0;
  // Local: the ranks that map every allocation (this rank's node, or its part of it).
  virtual int peers() const = 0;
  // Local: where [mine, mine + bytes) lies in this rank's part of an allocation, as the
  // allocation's number and the offset in the part; {kNone, 0} when it is not in one.
  virtual std::pair<uint64_t, uint64_t> place_of(const void *mine, size_t bytes) const {
    (void)mine;
    (void)bytes;
    return {kNone, 0};
  }
  // Local: peer r's part of the same allocation, at the same offset, as this process maps
  // it (writable), or nullptr when mine is not in this rank's part or r's part is shorter.
  // The engine's parameter owners write their updates there (param_push.hpp).
  virtual char *peer_view(const void *mine, size_t bytes, int r) const {
    (void)mine;
    (void)bytes;
    (void)r;
    return nullptr;
  }
};

class BackendOp {
 public:
  virtual ~BackendOp() = default;
  // Advances the operation without waiting for other ranks; returns true once it is
  // complete. Throws Error on failure.
  virtual bool step() = 0;
  // The communicator gave up on this operation (the watchdog declared it timed out), so
  // its peers may never take part again: release what can be released without them. The
  // destructor of an abandoned operation must not wait for anything.
  virtual void abandon() {}
};

// What a backend is created over: a group of ranks and an MPI communicator that the
// caller owns and keeps for the backend's lifetime (the communicator's data communicator,
// or a split of it for the parts of a hierarchical backend).
struct BackendGroup {
  Context *context = nullptr;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  bool deterministic = false;  // reductions sum in rank order (ordered_sum.hpp)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char *name() const = 0;
  // The memory this backend can read and write.
  virtual bool serves(MemoryKind kind) const { return kind == MemoryKind::Host; }
  // Limits of this backend beyond the communicator's checks (counts MPI cannot express,
  // say); throws Error(ZRT_ERR_NOT_SUPPORTED) naming them. Local.
  virtual void check(const CollArgs &args) const { (void)args; }
  // Starts args; args were validated and agreed by the caller. Called in the same
  // sequence on every rank of the group.
  virtual std::unique_ptr<BackendOp> start(const CollArgs &args) = 0;
  // Where zrt_comm_mem_alloc allocates so that this backend reads the buffers in place;
  // none: private host memory serves.
  virtual SharedBuffers *shared_buffers() { return nullptr; }
  // Facts for zrt-info (transport, chunk sizes...).
  virtual void describe(nlohmann::json &out) const { (void)out; }
  // Some operation was abandoned: the backend's destructor must not free what it may still
  // use. MPI keeps progressing a nonblocking collective whose communicator was freed
  // (Open MPI crashes in it), so such communicators are left to MPI_Finalize.
  virtual void abandoned() {}
};

}  // namespace zrt
