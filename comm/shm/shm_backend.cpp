#include "comm/shm/shm_backend.hpp"

#include <algorithm>
#include <cstring>

#include "comm/dtype.hpp"
#include "comm/group_nodes.hpp"
#include "comm/ordered_sum.hpp"
#include "comm/partition.hpp"
#include "comm/shm/cma.hpp"
#include "comm/shm/cma_phases.hpp"
#include "comm/shm/mapped_phases.hpp"
#include "comm/shm/shm_phase.hpp"
#include "runtime/error.hpp"
#include "runtime/log.hpp"
#include "runtime/mpi_error.hpp"
#include "runtime/runtime_context.hpp"

namespace zrt {

namespace {

class ReduceScatterPhase final : public Phase {
 public:
  ReduceScatterPhase(ShmChannel *ch, int rank, int n, ShmReduceScatterPlan plan)
      : ch_(ch), me_(rank), n_(n), plan_(std::move(plan)), esize_(dtype_size(plan_.dtype)) {
    // Each step carries one part per other rank; parts start on cache lines.
    part_bytes_ = ch_ != nullptr ? ch_->slot_bytes() / static_cast<size_t>(n_ - 1) / 64 * 64 : 0;
    per_step_ = ch_ != nullptr ? part_bytes_ / esize_ : std::max<size_t>(plan_.stream_length, 1);
    steps_ = (plan_.stream_length + per_step_ - 1) / per_step_;
    sources_.resize(static_cast<size_t>(n_));
  }

  uint64_t steps() const override { return steps_; }

  void produce(uint64_t j, uint64_t s) override {
    if (ch_ == nullptr) return;
    const size_t begin = j * per_step_, end = std::min(begin + per_step_, plan_.stream_length);
    char *slot = ch_->slot(me_, s);
    const char *send = static_cast<const char *>(plan_.send);
    for (int d = 0; d < n_; ++d) {
      if (d == me_) continue;
      char *part = slot + static_cast<size_t>(d < me_ ? d : d - 1) * part_bytes_;
      for_pieces(
          plan_.pieces[static_cast<size_t>(d)], begin, end,
          [&](size_t lo, size_t hi, const ShmPiece &p) {
            std::memcpy(part + (lo - begin) * esize_, send + (p.buffer + lo - p.stream) * esize_,
                        (hi - lo) * esize_);
          },
          [](size_t, size_t) {});
    }
  }

  bool consume(uint64_t j, uint64_t s) override {
    const size_t begin = j * per_step_, end = std::min(begin + per_step_, plan_.stream_length);
    const char *send = static_cast<const char *>(plan_.send);
    char *out = static_cast<char *>(plan_.out);
    for_pieces(
        plan_.pieces[static_cast<size_t>(me_)], begin, end,
        [&](size_t lo, size_t hi, const ShmPiece &p) {
          for (int r = 0; r < n_; ++r) {
            sources_[static_cast<size_t>(r)] =
                r == me_
                    ? send + (p.buffer + lo - p.stream) * esize_
                    : ch_->slot(r, s) + static_cast<size_t>(me_ < r ? me_ : me_ - 1) * part_bytes_ +
                          (lo - begin) * esize_;
          }
          ordered_sum_sources(sources_.data(), n_, hi - lo, plan_.dtype, plan_.op,
                              out + lo * esize_);
        },
        [&](size_t lo, size_t hi) {
          if (plan_.zero_gaps) std::memset(out + lo * esize_, 0, (hi - lo) * esize_);
        });
    return true;
  }

 private:
  ShmChannel *ch_;
  int me_, n_;
  ShmReduceScatterPlan plan_;
  size_t esize_, part_bytes_ = 0, per_step_ = 1;
  uint64_t steps_ = 0;
  std::vector<const void *> sources_;
};

class AllGatherPhase final : public Phase {
 public:
  AllGatherPhase(ShmChannel *ch, int rank, int n, ShmAllGatherPlan plan)
      : ch_(ch), me_(rank), n_(n), plan_(std::move(plan)), esize_(dtype_size(plan_.dtype)) {
    per_step_ =
        ch_ != nullptr ? ch_->slot_bytes() / esize_ : std::max<size_t>(plan_.stream_length, 1);
    steps_ = (plan_.stream_length + per_step_ - 1) / per_step_;
  }

  uint64_t steps() const override { return steps_; }

  void produce(uint64_t j, uint64_t s) override {
    const size_t begin = j * per_step_, end = std::min(begin + per_step_, plan_.stream_length);
    const char *src = static_cast<const char *>(plan_.src);
    char *recv = static_cast<char *>(plan_.recv);
    char *slot = ch_ != nullptr ? ch_->slot(me_, s) : nullptr;
    for_pieces(
        plan_.pieces[static_cast<size_t>(me_)], begin, end,
        [&](size_t lo, size_t hi, const ShmPiece &p) {
          const size_t bytes = (hi - lo) * esize_;
          if (slot != nullptr) std::memcpy(slot + (lo - begin) * esize_, src + lo * esize_, bytes);
          // From the slot, which the line above just brought into this core's cache.
          if (plan_.copy_own)
            std::memcpy(recv + (p.buffer + lo - p.stream) * esize_,
                        slot != nullptr ? slot + (lo - begin) * esize_ : src + lo * esize_, bytes);
        },
        [](size_t, size_t) {});
  }

  bool consume(uint64_t j, uint64_t s) override {
    if (ch_ == nullptr) return true;
    const size_t begin = j * per_step_, end = std::min(begin + per_step_, plan_.stream_length);
    char *recv = static_cast<char *>(plan_.recv);
    for (int r = 0; r < n_; ++r) {
      if (r == me_) continue;
      const char *slot = ch_->slot(r, s);
      for_pieces(
          plan_.pieces[static_cast<size_t>(r)], begin, end,
          [&](size_t lo, size_t hi, const ShmPiece &p) {
            std::memcpy(recv + (p.buffer + lo - p.stream) * esize_, slot + (lo - begin) * esize_,
                        (hi - lo) * esize_);
          },
          [](size_t, size_t) {});
    }
    return true;
  }

 private:
  ShmChannel *ch_;
  int me_, n_;
  ShmAllGatherPlan plan_;
  size_t esize_, per_step_ = 1;
  uint64_t steps_ = 0;
};

// Runs its phases' steps through the channel: produce whenever a slot is free, consume
// whenever every peer has produced, never wait.
class ShmOp final : public BackendOp {
 public:
  ShmOp(ShmChannel *ch, std::vector<std::unique_ptr<Phase>> phases)
      : ch_(ch), phases_(std::move(phases)) {
    for (const auto &p : phases_) {
      begin_.push_back(total_);
      total_ += p->steps();
      p->failure = &failure_;
    }
    base_ = ch_ != nullptr ? ch_->reserve(total_) : 0;
  }

  bool step() override {
    for (;;) {
      bool moved = false;
      if (produced_ < total_ && (ch_ == nullptr || ch_->can_produce(base_ + produced_))) {
        size_t i = phase_of(produced_);
        const uint64_t j = produced_ - begin_[i];
        const bool wait = j == 0 ? phases_[i]->after_previous : phases_[i]->lockstep;
        if (!wait || consumed_ == produced_) {
          phases_[i]->produce(j, base_ + produced_);
          if (ch_ != nullptr) ch_->produced(base_ + produced_);
          ++produced_;
          moved = true;
        }
      }
      if (consumed_ < produced_) {
        size_t i = phase_of(consumed_);
        if (ch_ == nullptr || ch_->can_consume(base_ + consumed_)) {
          // A phase that stopped early wants another call: come back on the next step().
          if (!phases_[i]->consume(consumed_ - begin_[i], base_ + consumed_)) break;
          if (ch_ != nullptr) ch_->consumed(base_ + consumed_);
          ++consumed_;
          moved = true;
        } else {
          phases_[i]->ahead(consumed_ - begin_[i]);
        }
      }
      if (!moved) break;
    }
    // Only now, with every reserved step run, so that the channel stays in step for the
    // collectives after this one.
    if (consumed_ == total_ && !failure_.empty()) throw Error(ZRT_ERR_BACKEND, failure_);
    return consumed_ == total_;
  }

 private:
  size_t phase_of(uint64_t step) const {
    size_t i = 0;
    while (i + 1 < begin_.size() && step >= begin_[i + 1])
      ++i;
    return i;
  }

  ShmChannel *ch_;
  std::vector<std::unique_ptr<Phase>> phases_;
  std::vector<uint64_t> begin_;
  uint64_t total_ = 0, base_ = 0, produced_ = 0, consumed_ = 0;
  std::string failure_;
};

// The standard layout of zerort/comm.h: rank r's shard, its valid part only.
std::vector<ShmPieces> shard_pieces(size_t count, int n) {
  std::vector<ShmPieces> pieces(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    Shard s = shard_range(count, n, r);
    if (s.length > 0) pieces[static_cast<size_t>(r)].push_back({0, s.offset, s.length});
  }
  return pieces;
}

}  // namespace

ShmBackend::ShmBackend(const BackendGroup &group) : group_(group) {
  GroupNodes nodes = group_nodes(*group.context, group.comm);
  if (nodes.nodes > 1)
    fail(ZRT_ERR_NOT_SUPPORTED,
         "backend shm serves the ranks of one node; this communicator spans {} nodes{} (use "
         "hier or auto)",
         nodes.nodes, nodes.faked ? " (faked by ranks_per_node)" : "");
  if (!nodes.shared_memory)
    fail(ZRT_ERR_NOT_SUPPORTED,
         "backend shm serves ranks that share memory; MPI_COMM_TYPE_SHARED splits this "
         "communicator");
  if (group.size == 1) return;
  // Rank 0's settings, so that every rank cuts the same steps and chooses the same path.
  const Config &config = group.context->config();
  const std::string &mode = config.get_string("comm.shm.single_copy");
  int64_t settings[6] = {config.get_int("comm.shm.slot_bytes"),
                         config.get_int("comm.shm.slots"),
                         mode == "off"   ? 0
                         : mode == "cma" ? 2
                                         : 1,
                         config.get_int("comm.shm.single_copy_bytes"),
                         config.get_string("comm.shm.direct") == "off" ? 0 : 1,
                         config.get_int("comm.shm.direct_bytes")};
  check_mpi(MPI_Bcast(settings, 6, MPI_INT64_T, 0, group.comm), "MPI_Bcast(shm settings)");
  if (settings[2] != 0) {
    CmaProbe probe = cma_probe(group.comm);  // the same verdict on every rank
    if (probe.works) {
      pids_ = std::move(probe.pids);
      single_copy_bytes_ = settings[2] == 2 ? 0 : static_cast<size_t>(settings[3]);
      single_copy_reduce_ = settings[2] == 2;
    } else if (settings[2] == 2) {
      fail(ZRT_ERR_NOT_SUPPORTED,
           "comm.shm.single_copy=cma, but process_vm_readv does not work between this node's "
           "ranks: {}",
           probe.why);
    } else {
      single_copy_why_ = probe.why;
      if (group.rank == 0)
        log::warn(
            "shm: single-copy transfers (process_vm_readv) do not work here, so large "
            "collectives copy through shared memory twice: {} (comm.shm.single_copy=off "
            "skips this check)",
            probe.why);
    }
  }
  // A reduce-scatter step gives each other rank a part of at least a cache line.
  size_t slot = std::max<size_t>(static_cast<size_t>(settings[0]),
                                 static_cast<size_t>(64 * 16) * static_cast<size_t>(group.size));
  channel_ = std::make_unique<ShmChannel>(group.comm, slot, static_cast<int>(settings[1]));
  if (settings[4] != 0) {
    segments_ = std::make_unique<SharedSegments>(group.comm);
    direct_bytes_ = static_cast<size_t>(settings[5]);
  }
}

ShmBackend::~ShmBackend() = default;

bool ShmBackend::single_copy(size_t stream_length, zrt_dtype_t dtype, bool reduce) const {
  // A reduce-scatter makes one copy and one summing pass either way (into a slot by the
  // producer, or into a scratch by the kernel), and the kernel's copy is the slower one
  // (about 3.2 GB/s against memcpy's 3.6-4.7 measured here), so auto keeps it staged.
  if (reduce && !single_copy_reduce_) return false;
  // The stream length is equal on every rank, so every rank chooses the same.
  return channel_ && !pids_.empty() &&
         stream_length * dtype_size(dtype) * static_cast<size_t>(size()) >= single_copy_bytes_;
}

std::unique_ptr<BackendOp> ShmBackend::start_plans(std::optional<ShmReduceScatterPlan> rs,
                                                   std::optional<ShmAllGatherPlan> ag) {
  std::vector<std::unique_ptr<Phase>> phases;
  const CmaPeers peers{channel_.get(), rank(), size(), &pids_, &scratch_};
  if (rs) {
    if (single_copy(rs->stream_length, rs->dtype, true))
      phases.push_back(make_cma_reduce_scatter(peers, *rs));
    else
      phases.push_back(std::make_unique<ReduceScatterPhase>(channel_.get(), rank(), size(), *rs));
  }
  if (ag) {
    if (single_copy(ag->stream_length, ag->dtype, false))
      phases.push_back(make_cma_all_gather(peers, *ag));
    else
      phases.push_back(std::make_unique<AllGatherPhase>(channel_.get(), rank(), size(), *ag));
    phases.back()->after_previous = rs.has_value();
  }
  // Large operations first find out whether every rank's buffers are shared (the same
  // verdict on every rank: the stream length is equal everywhere).
  const size_t stream_bytes = rs   ? rs->stream_length * dtype_size(rs->dtype)
                              : ag ? ag->stream_length * dtype_size(ag->dtype)
                                   : 0;
  if (channel_ && segments_ && stream_bytes * static_cast<size_t>(size()) >= direct_bytes_ &&
      stream_bytes > 0) {
    const MappedPeers mapped{channel_.get(), rank(), size(), segments_.get(), &direct_phases_};
    std::unique_ptr<Phase> rs_phase = rs ? std::move(phases.front()) : nullptr;
    std::unique_ptr<Phase> ag_phase = ag ? std::move(phases.back()) : nullptr;
    phases = make_mapped_phases(mapped, rs, std::move(rs_phase), ag, std::move(ag_phase));
  }
  return std::make_unique<ShmOp>(channel_.get(), std::move(phases));
}

std::unique_ptr<BackendOp> ShmBackend::start(const CollArgs &a) {
  const int n = size(), me = rank();
  const size_t esize = dtype_size(a.dtype);
  const Shard own = shard_range(a.count, n, me);
  std::optional<ShmReduceScatterPlan> rs;
  std::optional<ShmAllGatherPlan> ag;
  auto reduce_into = [&](void *out, bool zero_gaps) {
    ShmReduceScatterPlan p;
    p.send = a.send;
    p.out = out;
    p.stream_length = own.shard;
    p.pieces = shard_pieces(a.count, n);
    p.zero_gaps = zero_gaps;
    // An all-reduce's peers read the reduced shard next, from this rank's memory.
    p.stream = a.recv_cold && a.kind == CollKind::ReduceScatter;
    p.dtype = a.dtype;
    p.op = a.op;
    // Every rank cuts the same steps: the stream is the padded shard, equal everywhere.
    return p;
  };
  auto gather_from = [&](const void *src, void *recv) {
    ShmAllGatherPlan p;
    p.src = src;
    p.recv = recv;
    p.stream_length = own.shard;
    p.pieces = shard_pieces(a.count, n);
    p.copy_own = src != static_cast<const char *>(recv) + own.offset * esize;
    p.stream = a.recv_cold;
    p.dtype = a.dtype;
    return p;
  };
  switch (a.kind) {
    case CollKind::ReduceScatter:
      rs = reduce_into(a.recv, true);
      break;
    case CollKind::AllGather:
      ag = gather_from(a.send, a.recv);
      break;
    case CollKind::AllReduce: {
      // The reduced shard lands in its place in recv (no padding written: recv holds count
      // elements), and the all-gather then runs in place.
      char *own_place = static_cast<char *>(a.recv) + std::min(own.offset, a.count) * esize;
      rs = reduce_into(own_place, false);
      ag = gather_from(own_place, a.recv);
      break;
    }
    case CollKind::Broadcast: {
      ShmAllGatherPlan p;
      p.src = a.recv;
      p.recv = a.recv;
      p.stream_length = a.count;
      p.pieces.resize(static_cast<size_t>(n));
      if (a.count > 0) p.pieces[static_cast<size_t>(a.root)].push_back({0, 0, a.count});
      p.copy_own = false;
      p.dtype = a.dtype;
      ag = std::move(p);
      break;
    }
  }
  return start_plans(std::move(rs), std::move(ag));
}

void ShmBackend::describe(nlohmann::json &out) const {
  out["ranks"] = size();
  if (channel_) {
    out["slot_bytes"] = channel_->slot_bytes();
    out["slots"] = channel_->depth();
    if (!pids_.empty()) {
      out["single_copy"] = "cma";
      out["single_copy_bytes"] = single_copy_bytes_;
      out["single_copy_reduce"] = single_copy_reduce_;
    } else {
      out["single_copy"] = "off";
      if (!single_copy_why_.empty()) out["single_copy_missing"] = single_copy_why_;
    }
    out["direct"] = segments_ ? "auto" : "off";
    if (segments_) {
      out["direct_bytes"] = direct_bytes_;
      out["shared_buffers"] = segments_->segments();
      out["direct_phases"] = direct_phases_.load(std::memory_order_relaxed);
    }
  }
  out["kernels"] = ordered_sum_isa();
}

}  // namespace zrt
