#include "comm/ucx/ucx_backend.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "comm/dtype.hpp"
#include "comm/ordered_sum.hpp"
#include "comm/partition.hpp"
#include "comm/ucx/ucx_worker.hpp"
#include "runtime/error.hpp"
#include "runtime/mpi_error.hpp"
#include "runtime/runtime_context.hpp"

namespace zrt {

namespace {

// 20 bits of sequence (operations that far apart are never in flight together), 4 of
// phase, 16 of step or source rank, 24 of chunk.
enum Phase : uint64_t { kRing = 1, kGather = 2, kDirect = 3, kChain = 4 };
constexpr uint64_t kMaxChunks = uint64_t{1} << 24;
constexpr int kMaxRanks = 1 << 16;

uint64_t make_tag(uint64_t seq, Phase phase, uint64_t step, uint64_t chunk) {
  return (seq & 0xfffff) << 44 | (static_cast<uint64_t>(phase) & 0xf) << 40 |
         (step & 0xffff) << 24 | (chunk & 0xffffff);
}

// What every algorithm needs: the worker, the layout, and the pipeline's shape.
struct Layout {
  UcxWorker *w = nullptr;
  int n = 1, me = 0;
  size_t count = 0, shard = 0, esize = 1;
  size_t chunk = 1;   // elements per message
  size_t chunks = 0;  // per shard: ceil(shard / chunk)
  size_t window = 8;  // messages in flight per direction (per peer for direct)
  uint64_t seq = 0;
  zrt_dtype_t dtype = ZRT_DTYPE_FP32;

  size_t length(int block) const { return shard_range(count, n, block).length; }
  // Valid elements of chunk c of a block with `len` valid elements.
  size_t chunk_length(size_t len, size_t c) const {
    size_t begin = c * chunk;
    return begin >= len ? 0 : std::min(chunk, len - begin);
  }
  size_t bytes(size_t elements) const { return elements * esize; }
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  virtual bool advance() = 0;  // true when done
  virtual void cancel() = 0;   // abandon every transfer
};

// Transfers in flight, with the task each belongs to.
struct InFlight {
  size_t task;
  UcxTransfer transfer;
};

template <class OnDone>
void reap(std::vector<InFlight> &list, OnDone on_done) {
  for (size_t i = 0; i < list.size();) {
    if (list[i].transfer.done()) {
      size_t task = list[i].task;
      list[i] = std::move(list.back());
      list.pop_back();
      on_done(task);
    } else {
      ++i;
    }
  }
}

void cancel_all(std::vector<InFlight> &list) {
  for (InFlight &f : list)
    f.transfer.cancel();
  list.clear();
}

class RingReduceScatter final : public Algorithm {
 public:
  // out: this rank's block (shard elements, valid length written; padding zeroed when
  // zero_padding). avg: divide the reduced elements by n at the end.
  RingReduceScatter(const Layout &l, const void *send, void *out, bool zero_padding, bool avg)
      : l_(l),
        send_(static_cast<const char *>(send)),
        out_(static_cast<char *>(out)),
        zero_padding_(zero_padding),
        avg_(avg) {
    steps_ = static_cast<size_t>(l_.n - 1);
    total_ = steps_ * l_.chunks;
    acc_.resize(l_.bytes(l_.shard) * std::min<size_t>(steps_, 2));
    reduced_.assign(total_, 0);
    sent_.assign(total_, 0);
  }

  bool advance() override {
    reap(receives_, [&](size_t task) { reduce(task); });
    reap(sends_, [&](size_t task) { sent_[task] = 1, ++sent_count_; });
    const int next = (l_.me + 1) % l_.n;
    while (next_receive_ < total_ && receives_.size() < l_.window) {
      const size_t t = next_receive_ / l_.chunks, c = next_receive_ % l_.chunks;
      // acc[t % 2] was sent on at step t - 1: that send must be done before reuse.
      if (t >= 2 && !sent_[(t - 1) * l_.chunks + c]) break;
      const size_t len = l_.chunk_length(l_.length(recv_block(t)), c);
      if (len == 0) {
        reduced_[next_receive_] = 1;
        ++reduced_count_;
      } else {
        receives_.push_back(
            {next_receive_, l_.w->receive(acc(t) + l_.bytes(c * l_.chunk), l_.bytes(len),
                                          make_tag(l_.seq, kRing, t, c))});
      }
      ++next_receive_;
    }
    while (next_send_ < total_ && sends_.size() < l_.window) {
      const size_t t = next_send_ / l_.chunks, c = next_send_ % l_.chunks;
      if (t >= 1 && !reduced_[(t - 1) * l_.chunks + c]) break;
      const int block = send_block(t);
      const size_t len = l_.chunk_length(l_.length(block), c);
      if (len == 0) {
        sent_[next_send_] = 1;
        ++sent_count_;
      } else {
        const char *src =
            t == 0 ? send_ + l_.bytes(static_cast<size_t>(block) * l_.shard + c * l_.chunk)
                   : acc(t - 1) + l_.bytes(c * l_.chunk);
        sends_.push_back(
            {next_send_, l_.w->send(next, src, l_.bytes(len), make_tag(l_.seq, kRing, t, c))});
      }
      ++next_send_;
    }
    if (reduced_count_ < total_ || sent_count_ < total_) return false;
    if (!finished_) {
      finished_ = true;
      const size_t own = l_.length(l_.me);
      if (avg_ && own > 0) divide_buffer(out_, own, l_.dtype, l_.n);
      if (zero_padding_ && own < l_.shard)
        std::memset(out_ + l_.bytes(own), 0, l_.bytes(l_.shard - own));
    }
    return true;
  }

  void cancel() override {
    cancel_all(receives_);
    cancel_all(sends_);
  }

 private:
  int send_block(size_t t) const {
    return static_cast<int>((static_cast<size_t>(l_.me) + 2 * static_cast<size_t>(l_.n) - t - 1) %
                            static_cast<size_t>(l_.n));
  }
  int recv_block(size_t t) const {
    return static_cast<int>((static_cast<size_t>(l_.me) + 2 * static_cast<size_t>(l_.n) - t - 2) %
                            static_cast<size_t>(l_.n));
  }
  char *acc(size_t t) { return acc_.data() + (t % 2) * l_.bytes(l_.shard); }

  // Adds this rank's contribution to a received partial: in place, or into the output at
  // the last step (never in place there: the output may be the send buffer's own block).
  void reduce(size_t task) {
    const size_t t = task / l_.chunks, c = task % l_.chunks;
    const int block = recv_block(t);
    const size_t len = l_.chunk_length(l_.length(block), c);
    const void *sources[2] = {
        acc(t) + l_.bytes(c * l_.chunk),
        send_ + l_.bytes(static_cast<size_t>(block) * l_.shard + c * l_.chunk)};
    void *dst = t + 1 == steps_ ? out_ + l_.bytes(c * l_.chunk) : acc(t) + l_.bytes(c * l_.chunk);
    ordered_sum_sources(sources, 2, len, l_.dtype, ZRT_OP_SUM, dst);
    reduced_[task] = 1;
    ++reduced_count_;
  }

  Layout l_;
  const char *send_;
  char *out_;
  bool zero_padding_, avg_, finished_ = false;
  size_t steps_ = 0, total_ = 0, next_receive_ = 0, next_send_ = 0;
  size_t reduced_count_ = 0, sent_count_ = 0;
  std::vector<char> acc_;
  std::vector<uint8_t> reduced_, sent_;
  std::vector<InFlight> receives_, sends_;
};

class RingAllGather final : public Algorithm {
 public:
  // own: this rank's valid elements; recv: the whole output.
  RingAllGather(const Layout &l, const void *own, void *recv)
      : l_(l), own_(static_cast<const char *>(own)), recv_(static_cast<char *>(recv)) {
    total_ = static_cast<size_t>(l_.n - 1) * l_.chunks;
    received_.assign(total_, 0);
    char *own_place = recv_ + l_.bytes(std::min(static_cast<size_t>(l_.me) * l_.shard, l_.count));
    if (own_ != own_place) std::memcpy(own_place, own_, l_.bytes(l_.length(l_.me)));
  }

  bool advance() override {
    reap(receives_, [&](size_t task) { received_[task] = 1, ++received_count_; });
    reap(sends_, [&](size_t) { ++sent_count_; });
    const int next = (l_.me + 1) % l_.n;
    while (next_receive_ < total_ && receives_.size() < l_.window) {
      const size_t t = next_receive_ / l_.chunks, c = next_receive_ % l_.chunks;
      const int block = recv_block(t);
      const size_t len = l_.chunk_length(l_.length(block), c);
      if (len == 0) {
        received_[next_receive_] = 1;
        ++received_count_;
      } else {
        receives_.push_back(
            {next_receive_,
             l_.w->receive(recv_ + l_.bytes(static_cast<size_t>(block) * l_.shard + c * l_.chunk),
                           l_.bytes(len), make_tag(l_.seq, kGather, t, c))});
      }
      ++next_receive_;
    }
    while (next_send_ < total_ && sends_.size() < l_.window) {
      const size_t t = next_send_ / l_.chunks, c = next_send_ % l_.chunks;
      if (t >= 1 && !received_[(t - 1) * l_.chunks + c]) break;
      const int block = send_block(t);
      const size_t len = l_.chunk_length(l_.length(block), c);
      if (len == 0) {
        ++sent_count_;
      } else {
        const char *src =
            t == 0 ? own_ + l_.bytes(c * l_.chunk)
                   : recv_ + l_.bytes(static_cast<size_t>(block) * l_.shard + c * l_.chunk);
        sends_.push_back(
            {next_send_, l_.w->send(next, src, l_.bytes(len), make_tag(l_.seq, kGather, t, c))});
      }
      ++next_send_;
    }
    return received_count_ == total_ && sent_count_ == total_;
  }

  void cancel() override {
    cancel_all(receives_);
    cancel_all(sends_);
  }

 private:
  int send_block(size_t t) const {
    return static_cast<int>((static_cast<size_t>(l_.me) + static_cast<size_t>(l_.n) - t) %
                            static_cast<size_t>(l_.n));
  }
  int recv_block(size_t t) const {
    return static_cast<int>((static_cast<size_t>(l_.me) + 2 * static_cast<size_t>(l_.n) - t - 1) %
                            static_cast<size_t>(l_.n));
  }

  Layout l_;
  const char *own_;
  char *recv_;
  size_t total_ = 0, next_receive_ = 0, next_send_ = 0, received_count_ = 0, sent_count_ = 0;
  std::vector<uint8_t> received_;
  std::vector<InFlight> receives_, sends_;
};

// Deterministic reduce-scatter: every rank's piece of block r goes straight to rank r,
// which sums the n pieces of each chunk in rank order.
class DirectReduceScatter final : public Algorithm {
 public:
  DirectReduceScatter(const Layout &l, const void *send, void *out, bool zero_padding, zrt_op_t op)
      : l_(l),
        send_(static_cast<const char *>(send)),
        out_(static_cast<char *>(out)),
        zero_padding_(zero_padding),
        op_(op) {
    const size_t peers = static_cast<size_t>(l_.n - 1);
    staging_.resize(peers * l_.window * l_.bytes(l_.chunk));
    arrived_.assign(l_.chunks, 0);
    sources_.resize(static_cast<size_t>(l_.n));
  }

  bool advance() override {
    reap(receives_, [&](size_t chunk) { ++arrived_[chunk]; });
    reap(sends_, [&](size_t) { ++sent_count_; });
    const size_t peers = static_cast<size_t>(l_.n - 1), own = l_.length(l_.me);
    // Receives: a chunk's staging slots are free once the chunk `window` before is summed.
    while (next_receive_ < l_.chunks && next_receive_ < reduced_ + l_.window) {
      const size_t c = next_receive_, len = l_.chunk_length(own, c);
      for (int q = 0; q < l_.n && len > 0; ++q) {
        if (q == l_.me) continue;
        receives_.push_back(
            {c, l_.w->receive(slot(q, c), l_.bytes(len),
                              make_tag(l_.seq, kDirect, static_cast<uint64_t>(q), c))});
      }
      if (len == 0) arrived_[c] = peers;
      ++next_receive_;
    }
    // Sends: chunk by chunk to every peer, starting with the next rank so that no rank is
    // everyone's first destination.
    while (next_send_ < l_.chunks && sends_.size() < l_.window * peers) {
      const size_t c = next_send_;
      for (int j = 1; j < l_.n; ++j) {
        const int p = (l_.me + j) % l_.n;
        const size_t len = l_.chunk_length(l_.length(p), c);
        if (len == 0) {
          ++sent_count_;
          continue;
        }
        sends_.push_back(
            {c, l_.w->send(p, send_ + l_.bytes(static_cast<size_t>(p) * l_.shard + c * l_.chunk),
                           l_.bytes(len),
                           make_tag(l_.seq, kDirect, static_cast<uint64_t>(l_.me), c))});
      }
      ++next_send_;
    }
    while (reduced_ < next_receive_ && arrived_[reduced_] == peers) {
      const size_t c = reduced_, len = l_.chunk_length(own, c);
      for (int r = 0; r < l_.n; ++r)
        sources_[static_cast<size_t>(r)] =
            r == l_.me ? send_ + l_.bytes(static_cast<size_t>(l_.me) * l_.shard + c * l_.chunk)
                       : slot(r, c);
      ordered_sum_sources(sources_.data(), l_.n, len, l_.dtype, op_, out_ + l_.bytes(c * l_.chunk));
      ++reduced_;
    }
    if (reduced_ < l_.chunks || sent_count_ < l_.chunks * peers) return false;
    if (!finished_) {
      finished_ = true;
      if (zero_padding_ && own < l_.shard)
        std::memset(out_ + l_.bytes(own), 0, l_.bytes(l_.shard - own));
    }
    return true;
  }

  void cancel() override {
    cancel_all(receives_);
    cancel_all(sends_);
  }

 private:
  char *slot(int rank, size_t c) {
    const size_t peer = static_cast<size_t>(rank < l_.me ? rank : rank - 1);
    return staging_.data() + (peer * l_.window + c % l_.window) * l_.bytes(l_.chunk);
  }

  Layout l_;
  const char *send_;
  char *out_;
  bool zero_padding_, finished_ = false;
  zrt_op_t op_;
  size_t next_receive_ = 0, next_send_ = 0, reduced_ = 0, sent_count_ = 0;
  std::vector<char> staging_;
  std::vector<size_t> arrived_;
  std::vector<const void *> sources_;
  std::vector<InFlight> receives_, sends_;
};

class ChainBroadcast final : public Algorithm {
 public:
  ChainBroadcast(const Layout &l, void *buf, int root)
      : l_(l), buf_(static_cast<char *>(buf)), root_(root) {
    chunks_ = (l_.count + l_.chunk - 1) / l_.chunk;
    position_ = (l_.me - root_ + l_.n) % l_.n;
    received_.assign(chunks_, position_ == 0 ? 1 : 0);
    received_count_ = position_ == 0 ? chunks_ : 0;
    next_receive_ = position_ == 0 ? chunks_ : 0;
    next_send_ = position_ == l_.n - 1 ? chunks_ : 0;
    sent_count_ = next_send_;
  }

  bool advance() override {
    reap(receives_, [&](size_t c) { received_[c] = 1, ++received_count_; });
    reap(sends_, [&](size_t) { ++sent_count_; });
    while (next_receive_ < chunks_ && receives_.size() < l_.window) {
      const size_t c = next_receive_, len = l_.chunk_length(l_.count, c);
      receives_.push_back({c, l_.w->receive(buf_ + l_.bytes(c * l_.chunk), l_.bytes(len),
                                            make_tag(l_.seq, kChain, 0, c))});
      ++next_receive_;
    }
    while (next_send_ < chunks_ && sends_.size() < l_.window && received_[next_send_]) {
      const size_t c = next_send_, len = l_.chunk_length(l_.count, c);
      sends_.push_back({c, l_.w->send((l_.me + 1) % l_.n, buf_ + l_.bytes(c * l_.chunk),
                                      l_.bytes(len), make_tag(l_.seq, kChain, 0, c))});
      ++next_send_;
    }
    return received_count_ == chunks_ && sent_count_ == chunks_;
  }

  void cancel() override {
    cancel_all(receives_);
    cancel_all(sends_);
  }

 private:
  Layout l_;
  char *buf_;
  int root_, position_ = 0;
  size_t chunks_ = 0, next_receive_ = 0, next_send_ = 0, received_count_ = 0, sent_count_ = 0;
  std::vector<uint8_t> received_;
  std::vector<InFlight> receives_, sends_;
};

// A single rank: the collectives are local copies.
class Local final : public Algorithm {
 public:
  explicit Local(std::function<void()> work) : work_(std::move(work)) {}
  bool advance() override {
    if (work_) work_();
    work_ = nullptr;
    return true;
  }
  void cancel() override {}

 private:
  std::function<void()> work_;
};

class UcxOp final : public BackendOp {
 public:
  UcxOp(UcxWorker &w, std::vector<std::unique_ptr<Algorithm>> stages)
      : w_(w), stages_(std::move(stages)) {}
  ~UcxOp() override {
    // Transfers of a failed or abandoned operation are cancelled, never waited for.
    for (auto &s : stages_)
      s->cancel();
  }
  bool step() override {
    w_.progress();
    while (current_ < stages_.size() && stages_[current_]->advance())
      ++current_;
    return current_ == stages_.size();
  }
  void abandon() override {
    for (auto &s : stages_)
      s->cancel();
  }

 private:
  UcxWorker &w_;
  std::vector<std::unique_ptr<Algorithm>> stages_;
  size_t current_ = 0;
};

class UcxBackend final : public Backend {
 public:
  explicit UcxBackend(const BackendGroup &group) : group_(group) {
    if (group.size > kMaxRanks)
      fail(ZRT_ERR_NOT_SUPPORTED, "backend ucx serves at most {} ranks; this group has {}",
           kMaxRanks, group.size);
    // Rank 0's settings, so that every rank cuts the same chunks.
    int64_t settings[2] = {group.context->config().get_int("comm.ucx.chunk_bytes"),
                           group.context->config().get_int("comm.ucx.window")};
    check_mpi(MPI_Bcast(settings, 2, MPI_INT64_T, 0, group.comm), "MPI_Bcast(ucx settings)");
    chunk_bytes_ = static_cast<size_t>(settings[0]);
    window_ = static_cast<size_t>(settings[1]);
    worker_ = std::make_unique<UcxWorker>(group.comm);
  }

  const char *name() const override { return "ucx"; }
  void abandoned() override { worker_->abandon(); }

  void describe(nlohmann::json &out) const override {
    out["transports"] = worker_->transports();
    out["chunk_bytes"] = chunk_bytes_;
    out["window"] = window_;
    out["algorithm"] = group_.deterministic ? "direct, rank-order sum" : "ring";
  }

  std::unique_ptr<BackendOp> start(const CollArgs &a) override {
    Layout l;
    l.w = worker_.get();
    l.n = group_.size;
    l.me = group_.rank;
    l.count = a.count;
    l.esize = dtype_size(a.dtype);
    l.dtype = a.dtype;
    l.shard = shard_range(a.count, l.n, l.me).shard;
    const size_t span = a.kind == CollKind::Broadcast ? a.count : l.shard;
    l.chunk = std::max<size_t>(chunk_bytes_ / l.esize, 1);
    l.chunk = std::max(l.chunk, (span + kMaxChunks - 1) / kMaxChunks);
    l.chunks = (l.shard + l.chunk - 1) / l.chunk;
    l.window = window_;
    l.seq = next_seq_++;

    const Shard own = shard_range(a.count, l.n, l.me);
    char *own_place =
        static_cast<char *>(a.recv) + std::min(own.offset, a.count) * l.esize;  // in recv
    std::vector<std::unique_ptr<Algorithm>> stages;
    if (l.n == 1) {
      stages.push_back(std::make_unique<Local>([a, own, esize = l.esize] {
        if (a.count == 0 || a.kind == CollKind::Broadcast) return;
        if (a.kind == CollKind::AllGather) {
          if (a.send != a.recv) std::memcpy(a.recv, a.send, a.count * esize);
          return;
        }
        const void *src = a.send;
        ordered_sum_sources(&src, 1, a.count, a.dtype, a.op, a.recv);
        (void)own;
      }));
      return std::make_unique<UcxOp>(*worker_, std::move(stages));
    }
    const bool ordered = group_.deterministic;
    auto reduce_scatter = [&](void *out, bool zero_padding) -> std::unique_ptr<Algorithm> {
      if (ordered) return std::make_unique<DirectReduceScatter>(l, a.send, out, zero_padding, a.op);
      return std::make_unique<RingReduceScatter>(l, a.send, out, zero_padding, a.op == ZRT_OP_AVG);
    };
    switch (a.kind) {
      case CollKind::ReduceScatter:
        stages.push_back(reduce_scatter(a.recv, true));
        break;
      case CollKind::AllGather:
        stages.push_back(std::make_unique<RingAllGather>(l, a.send, a.recv));
        break;
      case CollKind::AllReduce:
        stages.push_back(reduce_scatter(own_place, false));
        stages.push_back(std::make_unique<RingAllGather>(l, own_place, a.recv));
        break;
      case CollKind::Broadcast:
        l.chunks = (a.count + l.chunk - 1) / l.chunk;
        stages.push_back(std::make_unique<ChainBroadcast>(l, a.recv, a.root));
        break;
    }
    return std::make_unique<UcxOp>(*worker_, std::move(stages));
  }

 private:
  BackendGroup group_;
  size_t chunk_bytes_ = 1 << 20, window_ = 8;
  std::unique_ptr<UcxWorker> worker_;
  uint64_t next_seq_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_ucx_backend(const BackendGroup &group) {
  return std::make_unique<UcxBackend>(group);
}

}  // namespace zrt
