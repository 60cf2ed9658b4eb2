#include "comm/staged/staged_backend.hpp"

#include "comm/dtype.hpp"
#include "comm/partition.hpp"
#include "comm/registry.hpp"
#include "memory/memory_part.hpp"
#include "memory/pool_buffer.hpp"
#include "runtime/error.hpp"
#include "runtime/runtime_context.hpp"

namespace zrt {

namespace {

// Where a collective's input and output lie in the caller's buffers and in staging.
struct Plan {
  const char *in = nullptr;  // device bytes copied to staging (nullptr: none)
  size_t in_bytes = 0;
  size_t in_at = 0;     // where they go in the staging buffer
  char *out = nullptr;  // device bytes the result is copied to
  size_t out_bytes = 0;
  size_t out_from = 0;                    // where the result starts in the staging buffer
  size_t send_bytes = 0, recv_bytes = 0;  // staging for the host collective
  bool in_place = false;                  // the host collective runs in one buffer
};

Plan plan_of(const CollArgs &a, int size, int rank) {
  const size_t es = dtype_size(a.dtype);
  const Shard own = shard_range(a.count, size, rank);
  Plan p;
  switch (a.kind) {
    case CollKind::ReduceScatter:
      p.in = static_cast<const char *>(a.send);
      p.in_bytes = p.send_bytes = a.count * es;
      p.out = static_cast<char *>(a.recv);
      p.out_bytes = p.recv_bytes = own.shard * es;
      break;
    case CollKind::AllGather: {
      // Each rank's own elements go to their place of the staging buffer, which the
      // host all-gathers in place.
      p.in = static_cast<const char *>(a.send);
      p.in_bytes = own.length * es;
      p.in_at = own.offset * es;
      p.out = static_cast<char *>(a.recv);
      p.out_bytes = p.recv_bytes = a.count * es;
      p.in_place = true;
      break;
    }
    case CollKind::AllReduce:
      p.in = static_cast<const char *>(a.send);
      p.in_bytes = a.count * es;
      p.out = static_cast<char *>(a.recv);
      p.out_bytes = p.recv_bytes = a.count * es;
      p.in_place = true;
      break;
    case CollKind::Broadcast:
      if (rank == a.root) {
        p.in = static_cast<const char *>(a.recv);
        p.in_bytes = a.count * es;
      }
      p.out = static_cast<char *>(a.recv);
      p.out_bytes = p.recv_bytes = a.count * es;
      p.in_place = true;
      break;
  }
  if (p.in_bytes == 0) p.in = nullptr;
  return p;
}

}  // namespace

class StagedOp final : public BackendOp {
 public:
  StagedOp(StagedBackend &backend, const CollArgs &args)
      : backend_(backend), args_(args), plan_(plan_of(args, backend.size_, backend.rank_)) {
    Pool &pinned = *backend.pinned_;
    if (plan_.recv_bytes > 0)
      recv_ = PoolAllocation::allocate(pinned, plan_.recv_bytes, Lifetime::Transient);
    if (!plan_.in_place && plan_.send_bytes > 0)
      send_ = PoolAllocation::allocate(pinned, plan_.send_bytes, Lifetime::Transient);
    char *staging_in =
        plan_.in_place ? static_cast<char *>(recv_.data()) : static_cast<char *>(send_.data());
    Stream &s = *backend.stream_;
    // A plain call (zrt_comm_all_reduce & co.) names no producer: it comes after the work the
    // program already put on its default stream, as a cudaMemcpy would. zerort's stream is
    // non-blocking, so without this a cudaMemset of the buffers just before the call could
    // land after the result (seen on an H200, 2026-12-04). On the emulated device the
    // program's stream is the calling thread, done already.
    s.wait(args.ready ? args.ready : backend.device_->wrap_stream(nullptr)->record());
    if (plan_.in != nullptr) s.copy(staging_in + plan_.in_at, plan_.in, plan_.in_bytes);
    copied_in_ = s.record();
    ticket_ = backend.order_.take();  // last: nothing after it may fail
  }

  bool step() override {
    switch (phase_) {
      case Phase::CopyIn: {
        if (!copied_in_.done() || !backend_.order_.is_turn(ticket_)) return false;
        CollArgs host = args_;
        host.ready = Event();
        auto *recv = static_cast<char *>(recv_.data());
        host.recv = recv;
        if (args_.kind == CollKind::AllGather) {
          const Shard own = shard_range(args_.count, backend_.size_, backend_.rank_);
          host.send = recv + own.offset * dtype_size(args_.dtype);
        } else if (args_.kind == CollKind::Broadcast) {
          host.send = nullptr;
        } else {
          host.send = plan_.in_place ? recv : send_.data();
        }
        try {
          op_ = backend_.host_->start(host);
        } catch (...) {
          backend_.order_.skip(ticket_);
          throw;
        }
        backend_.order_.started();
        phase_ = Phase::Host;
        [[fallthrough]];
      }
      case Phase::Host:
        if (!op_->step()) return false;
        op_.reset();
        if (plan_.out_bytes > 0)
          backend_.stream_->copy(plan_.out, static_cast<char *>(recv_.data()) + plan_.out_from,
                                 plan_.out_bytes);
        copied_out_ = backend_.stream_->record();
        phase_ = Phase::CopyOut;
        [[fallthrough]];
      case Phase::CopyOut:
        return copied_out_.done();
    }
    return false;
  }

  void abandon() override {
    if (phase_ == Phase::CopyIn) backend_.order_.skip(ticket_);
    if (op_) op_->abandon();
    abandoned_ = true;
  }

  ~StagedOp() override {
    // The copies read and write the staging buffers: they must land before the buffers
    // go back to the pool (an abandoned op is buried, never destroyed while MPI runs).
    if (abandoned_) return;
    try {
      if (phase_ == Phase::CopyIn) copied_in_.synchronize();
      if (phase_ == Phase::CopyOut) copied_out_.synchronize();
    } catch (...) {
      // Reported by step() or the stream's next wait.
    }
  }

 private:
  enum class Phase { CopyIn, Host, CopyOut };
  StagedBackend &backend_;
  CollArgs args_;
  Plan plan_;
  PoolAllocation send_, recv_;
  Event copied_in_, copied_out_;
  uint64_t ticket_ = 0;
  Phase phase_ = Phase::CopyIn;
  std::unique_ptr<BackendOp> op_;
  bool abandoned_ = false;
};

StagedBackend::StagedBackend(const BackendGroup &group) : rank_(group.rank), size_(group.size) {
  MemoryPart &memory = group.context->part<MemoryPart>();
  std::string why;
  device_ = memory.device(&why);
  if (device_ == nullptr) fail(ZRT_ERR_NOT_SUPPORTED, "no device: {}", why);
  pinned_ = &memory.pool(MemorySpace::PinnedHost);
  stream_ = device_->make_stream();
  comm_ = MpiComm::dup(group.comm, "MPI_Comm_dup(staged)");
  BackendGroup host = group;
  host.comm = comm_;
  host_ = create_host_backend(host);
}

StagedBackend::~StagedBackend() {
  host_.reset();  // before the communicator it uses
  if (abandoned_) comm_.abandon();
}

void StagedBackend::check(const CollArgs &args) const {
  CollArgs host = args;
  host_->check(host);
}

std::unique_ptr<BackendOp> StagedBackend::start(const CollArgs &args) {
  return std::make_unique<StagedOp>(*this, args);
}

void StagedBackend::describe(nlohmann::json &out) const {
  nlohmann::json host;
  host_->describe(host);
  out = {{"device", device_->kind()}, {"host_backend", host_->name()}, {"host", host}};
}

void StagedBackend::abandoned() {
  abandoned_ = true;
  host_->abandoned();
}

}  // namespace zrt
