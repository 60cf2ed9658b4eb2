// Collectives on device memory through the host (LLNL Aluminum's host-transfer idea), for
// the layouts NCCL cannot serve: two ranks on one GPU, builds without NCCL, the emulated
// device. Each collective is a small state machine:
//
//   copy stream: wait for the producer's event (CollArgs::ready), copy the send buffer
//                (device) into pinned staging
//   host:        once the copy is done and it is this op's turn, start the collective on
//                the staging buffers on a host backend of its own (shm on one node, hier
//                or ucx/mpi across nodes), and step it
//   copy stream: copy the result into the receive buffer (device); done when it lands
//
// The host backend is this backend's own, on a communicator of its own, and its ops start
// in the order of a StartOrder ticket taken in start() (the same order on every rank): a
// staged op starts its host part only when its copy is done, and copies finish in
// different orders on different ranks. In deterministic mode the host backend sums in rank
// order, so the results are bitwise those of the same collective on host memory.
#pragma once

#include <memory>

#include "comm/backend.hpp"
#include "comm/start_order.hpp"
#include "memory/device.hpp"
#include "memory/pool.hpp"
#include "runtime/mpi_comm.hpp"

namespace zrt {

class StagedBackend final : public Backend {
 public:
  // Collective over group.comm. Throws Error(ZRT_ERR_NOT_SUPPORTED) when the rank has no
  // device (the registry then reports why no backend serves device memory).
  explicit StagedBackend(const BackendGroup &group);
  ~StagedBackend() override;

  const char *name() const override { return "staged"; }
  bool serves(MemoryKind kind) const override { return kind == MemoryKind::Device; }
  void check(const CollArgs &args) const override;
  std::unique_ptr<BackendOp> start(const CollArgs &args) override;
  void describe(nlohmann::json &out) const override;
  void abandoned() override;

 private:
  friend class StagedOp;

  int rank_, size_;
  Device *device_;
  Pool *pinned_;
  MpiComm comm_;  // the host backend's
  std::unique_ptr<Backend> host_;
  std::unique_ptr<Stream> stream_;  // copies in and out, in FIFO order
  StartOrder order_;
  bool abandoned_ = false;
};

}  // namespace zrt
