#include "comm/shm/cma_phases.hpp"

#include <fmt/format.h>

#include <cstring>

#include "comm/dtype.hpp"
#include "comm/ordered_sum.hpp"
#include "comm/shm/cma.hpp"

namespace zrt {

namespace {

// Per peer, the piece of a reduce-scatter read before summing: the scratch of all peers,
// the own part and the output then stay in L2 for the sum.
constexpr size_t kReduceChunkBytes = size_t{256} << 10;
// Largest single all-gather read: bounds the time one call blocks.
constexpr size_t kGatherChunkBytes = size_t{4} << 20;
// Bytes moved per consume call before it hands control back to the progress engine, so
// the watchdog and other communicators get a look in during a long collective.
constexpr size_t kConsumeBudgetBytes = size_t{16} << 20;

// The one 64-bit word a rank posts in its slot for each step.
uint64_t &word(ShmChannel *ch, int rank, uint64_t s) {
  return *reinterpret_cast<uint64_t *>(ch->slot(rank, s));
}

// The common part: posting an address, collecting the peers', and the finishing step.
class CmaPhase : public Phase {
 public:
  explicit CmaPhase(const CmaPeers &peers) : p_(peers) {
    lockstep = true;
    remote_.resize(static_cast<size_t>(p_.size));
  }
  uint64_t steps() const override { return 2; }

  void produce(uint64_t j, uint64_t s) override {
    word(p_.channel, p_.rank, s) = j == 0 ? reinterpret_cast<uintptr_t>(posted()) : failed_ ? 1 : 0;
  }

  bool consume(uint64_t j, uint64_t s) override {
    if (j == 1) {
      for (int r = 0; r < p_.size; ++r)
        if (r != p_.rank && word(p_.channel, r, s) != 0 && failure->empty())
          *failure = fmt::format(
              "rank {} of the node could not read its peers' memory with process_vm_readv (its "
              "own error says why; comm.shm.single_copy=off avoids it)",
              r);
      return true;
    }
    if (!collected_) {
      for (int r = 0; r < p_.size; ++r)
        remote_[static_cast<size_t>(r)] =
            reinterpret_cast<const char *>(static_cast<uintptr_t>(word(p_.channel, r, s)));
      collected_ = true;
    }
    if (!failure->empty()) return true;  // an earlier phase failed: move nothing
    return transfer();
  }

 protected:
  virtual const void *posted() const = 0;
  // Moves up to kConsumeBudgetBytes; true when all is moved (or it failed).
  virtual bool transfer() = 0;

  // Reads bytes at offset `at` of rank r's posted buffer; false (with the failure set)
  // when the kernel refuses.
  bool read(int r, size_t at, void *to, size_t bytes) {
    std::string e = cma_read((*p_.pids)[static_cast<size_t>(r)],
                             remote_[static_cast<size_t>(r)] + at, to, bytes);
    if (e.empty()) return true;
    failed_ = true;
    *failure = fmt::format("rank {} of the node reading rank {}: {}", p_.rank, r, e);
    return false;
  }

  CmaPeers p_;
  std::vector<const char *> remote_;  // per rank, its posted address
  bool collected_ = false, failed_ = false;
};

class CmaReduceScatterPhase final : public CmaPhase {
 public:
  CmaReduceScatterPhase(const CmaPeers &peers, ShmReduceScatterPlan plan)
      : CmaPhase(peers), plan_(std::move(plan)), esize_(dtype_size(plan_.dtype)) {
    chunk_ = std::max<size_t>(kReduceChunkBytes / esize_, 1);
    sources_.resize(static_cast<size_t>(p_.size));
  }

 private:
  const void *posted() const override { return plan_.send; }

  bool transfer() override {
    const int me = p_.rank, n = p_.size;
    const size_t part_bytes = chunk_ * esize_;
    std::vector<char> &scratch = *p_.scratch;
    if (scratch.size() < part_bytes * static_cast<size_t>(n - 1))
      scratch.resize(part_bytes * static_cast<size_t>(n - 1));
    const char *send = static_cast<const char *>(plan_.send);
    char *out = static_cast<char *>(plan_.out);
    size_t moved = 0;
    while (pos_ < plan_.stream_length && moved < kConsumeBudgetBytes) {
      const size_t begin = pos_, end = std::min(begin + chunk_, plan_.stream_length);
      bool ok = true;
      for_pieces(
          plan_.pieces[static_cast<size_t>(me)], begin, end,
          [&](size_t lo, size_t hi, const ShmPiece &p) {
            if (!ok) return;
            const size_t at = (p.buffer + lo - p.stream) * esize_, bytes = (hi - lo) * esize_;
            for (int r = 0; r < n && ok; ++r) {
              if (r == me) {
                sources_[static_cast<size_t>(r)] = send + at;
                continue;
              }
              char *part = scratch.data() + static_cast<size_t>(r < me ? r : r - 1) * part_bytes +
                           (lo - begin) * esize_;
              ok = read(r, at, part, bytes);
              sources_[static_cast<size_t>(r)] = part;
            }
            if (ok)
              ordered_sum_sources(sources_.data(), n, hi - lo, plan_.dtype, plan_.op,
                                  out + lo * esize_);
          },
          [&](size_t lo, size_t hi) {
            if (plan_.zero_gaps) std::memset(out + lo * esize_, 0, (hi - lo) * esize_);
          });
      if (!ok) return true;
      moved += (end - begin) * esize_ * static_cast<size_t>(n);
      pos_ = end;
    }
    return pos_ >= plan_.stream_length;
  }

  ShmReduceScatterPlan plan_;
  size_t esize_, chunk_ = 1, pos_ = 0;
  std::vector<const void *> sources_;
};

class CmaAllGatherPhase final : public CmaPhase {
 public:
  CmaAllGatherPhase(const CmaPeers &peers, ShmAllGatherPlan plan)
      : CmaPhase(peers), plan_(std::move(plan)), esize_(dtype_size(plan_.dtype)) {
    chunk_ = std::max<size_t>(kGatherChunkBytes / esize_, 1);
  }

 private:
  const void *posted() const override { return plan_.src; }

  // The own shard, while the peers have not all posted their addresses.
  void ahead(uint64_t j) override {
    if (j != 0 || !plan_.copy_own || own_ >= plan_.stream_length) return;
    own_ = copy_own(own_);
  }

  // Copies the own stream's chunk at `from` into recv; returns where the next one starts.
  size_t copy_own(size_t from) {
    const size_t end = std::min(from + chunk_, plan_.stream_length);
    const char *src = static_cast<const char *>(plan_.src);
    char *recv = static_cast<char *>(plan_.recv);
    for_pieces(
        plan_.pieces[static_cast<size_t>(p_.rank)], from, end,
        [&](size_t lo, size_t hi, const ShmPiece &p) {
          std::memcpy(recv + (p.buffer + lo - p.stream) * esize_, src + lo * esize_,
                      (hi - lo) * esize_);
        },
        [](size_t, size_t) {});
    return end;
  }

  // Sources in the order me + 1, me + 2, ..., me (each rank starts on a different peer,
  // which spreads the readers over the sources), one chunk at a time; the own shard last,
  // as far as ahead() has not copied it already.
  bool transfer() override {
    const int me = p_.rank, n = p_.size;
    char *recv = static_cast<char *>(plan_.recv);
    size_t moved = 0;
    while (k_ <= n && moved < kConsumeBudgetBytes) {
      const int r = (me + k_) % n;
      if (r == me && (!plan_.copy_own || own_ >= plan_.stream_length)) {
        ++k_;
        continue;
      }
      if (r == me) {  // what ahead() has not copied yet
        const size_t from = own_;
        own_ = copy_own(from);
        moved += (own_ - from) * esize_;
        continue;
      }
      const size_t begin = pos_, end = std::min(begin + chunk_, plan_.stream_length);
      bool ok = true;
      for_pieces(
          plan_.pieces[static_cast<size_t>(r)], begin, end,
          [&](size_t lo, size_t hi, const ShmPiece &p) {
            if (!ok) return;
            const size_t bytes = (hi - lo) * esize_;
            ok = read(r, lo * esize_, recv + (p.buffer + lo - p.stream) * esize_, bytes);
            moved += bytes;
          },
          [](size_t, size_t) {});
      if (!ok) return true;
      pos_ = end;
      if (pos_ >= plan_.stream_length) {
        pos_ = 0;
        ++k_;
      }
    }
    return k_ > n;
  }

  ShmAllGatherPlan plan_;
  size_t esize_, chunk_ = 1, pos_ = 0;
  size_t own_ = 0;  // the own stream is copied up to here
  int k_ = 1;
};

}  // namespace

std::unique_ptr<Phase> make_cma_reduce_scatter(const CmaPeers &peers, ShmReduceScatterPlan plan) {
  return std::make_unique<CmaReduceScatterPhase>(peers, std::move(plan));
}

std::unique_ptr<Phase> make_cma_all_gather(const CmaPeers &peers, ShmAllGatherPlan plan) {
  return std::make_unique<CmaAllGatherPhase>(peers, std::move(plan));
}

}  // namespace zrt
