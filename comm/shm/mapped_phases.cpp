#include "comm/shm/mapped_phases.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "comm/dtype.hpp"
#include "comm/ordered_sum.hpp"
#include "comm/streaming_copy.hpp"

namespace zrt {

namespace {

// A direct reduce-scatter sums this much of its shard at a time: the sources and the output
// of one chunk stay in L2.
constexpr size_t kReduceChunkBytes = size_t{256} << 10;
constexpr size_t kGatherChunkBytes = size_t{1} << 20;
// Bytes moved per consume call before handing control back to the progress engine.
constexpr size_t kConsumeBudgetBytes = size_t{16} << 20;

// What the header found, shared by the operation's phases.
struct Choice {
  bool known = false;                 // the header step is consumed
  bool rs = false, ag = false;        // direct
  std::vector<const char *> rs_send;  // per rank, its send buffer as mapped here
  std::vector<const char *> ag_src;   // per rank, its source as mapped here
};

// The last byte a plan's pieces reach in a buffer, per rank: what a peer may read of it.
size_t send_extent(const ShmReduceScatterPlan &plan) {
  size_t end = 0;
  for (const ShmPieces &pieces : plan.pieces)
    for (const ShmPiece &p : pieces)
      end = std::max(end, p.buffer + p.length);
  return end * dtype_size(plan.dtype);
}

size_t src_extent(const ShmAllGatherPlan &plan, int r) {
  size_t end = 0;
  for (const ShmPiece &p : plan.pieces[static_cast<size_t>(r)])
    end = std::max(end, p.stream + p.length);
  return end * dtype_size(plan.dtype);
}

// What a rank posts of one buffer, and how far its peers may read it.
struct Posted {
  bool used = false;
  const void *mine = nullptr;
  std::vector<size_t> extent;  // per rank, bytes
};

class HeaderPhase final : public Phase {
 public:
  HeaderPhase(const MappedPeers &peers, Posted rs, Posted ag, std::shared_ptr<Choice> choice,
              Phase *barrier)
      : p_(peers),
        rs_(std::move(rs)),
        ag_(std::move(ag)),
        choice_(std::move(choice)),
        barrier_(barrier) {}

  uint64_t steps() const override { return 1; }

  void produce(uint64_t, uint64_t s) override {
    uint64_t post[4] = {SharedSegments::kNone, 0, SharedSegments::kNone, 0};
    const size_t me = static_cast<size_t>(p_.rank);
    if (rs_.used) {
      SharedSegments::Location at = p_.segments->locate(rs_.mine, rs_.extent[me]);
      post[0] = at.segment;
      post[1] = at.offset;
    }
    if (ag_.used) {
      SharedSegments::Location at = p_.segments->locate(ag_.mine, ag_.extent[me]);
      post[2] = at.segment;
      post[3] = at.offset;
    }
    std::memcpy(p_.channel->slot(p_.rank, s), post, sizeof post);
    std::memcpy(mine_.data(), post, sizeof post);
  }

  bool consume(uint64_t, uint64_t s) override {
    const int n = p_.size;
    std::vector<std::array<uint64_t, 4>> posts(static_cast<size_t>(n));
    // The own post from memory: the channel only keeps this rank from overwriting a slot
    // its peers have yet to read, and the phases after this one may already have produced
    // into this rank's slot of this step.
    for (int r = 0; r < n; ++r)
      if (r == p_.rank)
        posts[static_cast<size_t>(r)] = mine_;
      else
        std::memcpy(posts[static_cast<size_t>(r)].data(), p_.channel->slot(r, s),
                    4 * sizeof(uint64_t));
    if (rs_.used) choice_->rs = resolve(posts, 0, rs_, choice_->rs_send);
    if (ag_.used) choice_->ag = resolve(posts, 2, ag_, choice_->ag_src);
    choice_->known = true;
    // Nobody reads anybody's buffers: the staged phases need no closing barrier, and
    // without the wait a rank may go on to its next collective at once.
    barrier_->after_previous = choice_->rs || choice_->ag;
    if (p_.direct_phases != nullptr)
      p_.direct_phases->fetch_add((choice_->rs ? 1 : 0) + (choice_->ag ? 1 : 0),
                                  std::memory_order_relaxed);
    return true;
  }

 private:
  // Every rank's buffer as mapped here, when every rank posted a shared one.
  bool resolve(const std::vector<std::array<uint64_t, 4>> &posts, size_t field,
               const Posted &posted, std::vector<const char *> &out) {
    for (const auto &post : posts)
      if (post[field] == SharedSegments::kNone) return false;
    out.resize(posts.size());
    for (int r = 0; r < p_.size; ++r) {
      const auto &post = posts[static_cast<size_t>(r)];
      SharedSegments::Location at{post[field], post[field + 1]};
      out[static_cast<size_t>(r)] = p_.segments->peer(at, r, posted.extent[static_cast<size_t>(r)]);
      if (out[static_cast<size_t>(r)] == nullptr) {
        // Allocation is collective, so this means a buffer freed while in use (or a bug).
        if (failure->empty())
          *failure = fmt::format(
              "rank {} of the node does not know rank {}'s shared buffer (segment {}, offset "
              "{}): was it freed while this collective used it?",
              p_.rank, r, at.segment, at.offset);
        return false;
      }
    }
    return true;
  }

  MappedPeers p_;
  Posted rs_, ag_;
  std::shared_ptr<Choice> choice_;
  Phase *barrier_;  // owned by the same operation
  std::array<uint64_t, 4> mine_{};
};

// A phase that runs direct when the header chose so, else the phase it wraps. The direct
// work is a list of chunks spread over the wrapped phase's steps.
//
// Producing does not wait for the header: until the choice is known the wrapped phase
// produces (it writes only this rank's own slot, and its output where it is this rank's
// own), so the staged path keeps its pipelining, and a direct choice merely leaves those
// first slots unread. Consuming always comes after the header's.
class SwitchPhase : public Phase {
 public:
  SwitchPhase(std::unique_ptr<Phase> fallback, std::shared_ptr<Choice> choice)
      : fallback_(std::move(fallback)), choice_(std::move(choice)) {
    lockstep = fallback_->lockstep;
    after_previous = fallback_->after_previous;
  }

  uint64_t steps() const override { return fallback_->steps(); }

  void produce(uint64_t j, uint64_t s) override {
    fallback_->failure = failure;
    if (!choice_->known || !direct()) fallback_->produce(j, s);
  }

  bool consume(uint64_t j, uint64_t s) override {
    fallback_->failure = failure;
    if (!direct()) return fallback_->consume(j, s);
    if (!failure->empty()) return true;  // an earlier phase failed: move nothing
    const size_t total = chunks(), steps = fallback_->steps();
    const size_t target = j + 1 >= steps ? total : (j + 1) * total / steps;
    size_t moved = 0;
    while (done_ < target) {
      if (moved >= kConsumeBudgetBytes) return false;
      moved += run(done_++);
    }
    return true;
  }

  void ahead(uint64_t j) override {
    if (!direct()) fallback_->ahead(j);
  }

 protected:
  virtual bool direct() const = 0;
  virtual size_t chunks() const = 0;
  virtual size_t run(size_t k) = 0;  // returns the bytes it moved

  std::unique_ptr<Phase> fallback_;
  std::shared_ptr<Choice> choice_;
  size_t done_ = 0;
};

class ReduceScatterSwitch final : public SwitchPhase {
 public:
  ReduceScatterSwitch(const MappedPeers &peers, const ShmReduceScatterPlan &plan,
                      std::unique_ptr<Phase> fallback, std::shared_ptr<Choice> choice)
      : SwitchPhase(std::move(fallback), std::move(choice)),
        p_(peers),
        plan_(plan),
        esize_(dtype_size(plan.dtype)),
        chunk_(std::max<size_t>(kReduceChunkBytes / esize_, 1)),
        sources_(static_cast<size_t>(peers.size)) {}

 private:
  bool direct() const override { return choice_->rs; }
  size_t chunks() const override { return (plan_.stream_length + chunk_ - 1) / chunk_; }

  size_t run(size_t k) override {
    const size_t begin = k * chunk_, end = std::min(begin + chunk_, plan_.stream_length);
    char *out = static_cast<char *>(plan_.out);
    size_t moved = 0;
    for_pieces(
        plan_.pieces[static_cast<size_t>(p_.rank)], begin, end,
        [&](size_t lo, size_t hi, const ShmPiece &p) {
          const size_t at = (p.buffer + lo - p.stream) * esize_;
          for (int r = 0; r < p_.size; ++r)
            sources_[static_cast<size_t>(r)] = choice_->rs_send[static_cast<size_t>(r)] + at;
          ordered_sum_sources(sources_.data(), p_.size, hi - lo, plan_.dtype, plan_.op,
                              out + lo * esize_, plan_.stream);
          moved += (hi - lo) * esize_ * static_cast<size_t>(p_.size);
        },
        [&](size_t lo, size_t hi) {
          if (plan_.zero_gaps) std::memset(out + lo * esize_, 0, (hi - lo) * esize_);
        });
    return moved;
  }

  MappedPeers p_;
  ShmReduceScatterPlan plan_;
  size_t esize_, chunk_;
  std::vector<const void *> sources_;
};

class AllGatherSwitch final : public SwitchPhase {
 public:
  AllGatherSwitch(const MappedPeers &peers, const ShmAllGatherPlan &plan,
                  std::unique_ptr<Phase> fallback, std::shared_ptr<Choice> choice)
      : SwitchPhase(std::move(fallback), std::move(choice)),
        p_(peers),
        plan_(plan),
        esize_(dtype_size(plan.dtype)),
        chunk_(std::max<size_t>(kGatherChunkBytes / esize_, 1)) {
    per_source_ = (plan_.stream_length + chunk_ - 1) / chunk_;
  }

 private:
  bool direct() const override { return choice_->ag; }
  size_t chunks() const override { return per_source_ * static_cast<size_t>(p_.size); }

  // Sources in the order me + 1, me + 2, ..., me: each rank starts on a different peer,
  // which spreads the readers over the sources; the own stream last.
  size_t run(size_t k) override {
    const int r = (p_.rank + 1 + static_cast<int>(k / per_source_)) % p_.size;
    if (r == p_.rank && !plan_.copy_own) return 0;
    const char *src = r == p_.rank ? static_cast<const char *>(plan_.src)
                                   : choice_->ag_src[static_cast<size_t>(r)];
    const size_t begin = k % per_source_ * chunk_,
                 end = std::min(begin + chunk_, plan_.stream_length);
    char *recv = static_cast<char *>(plan_.recv);
    size_t moved = 0;
    for_pieces(
        plan_.pieces[static_cast<size_t>(r)], begin, end,
        [&](size_t lo, size_t hi, const ShmPiece &p) {
          char *to = recv + (p.buffer + lo - p.stream) * esize_;
          if (plan_.stream)
            copy_streaming(to, src + lo * esize_, (hi - lo) * esize_);
          else
            std::memcpy(to, src + lo * esize_, (hi - lo) * esize_);
          moved += (hi - lo) * esize_;
        },
        [](size_t, size_t) {});
    return moved;
  }

  MappedPeers p_;
  ShmAllGatherPlan plan_;
  size_t esize_, chunk_, per_source_ = 0;
};

// Waits for the previous phases until the header finds that nothing went direct.
class BarrierPhase final : public Phase {
 public:
  BarrierPhase() { after_previous = true; }
  uint64_t steps() const override { return 1; }
  void produce(uint64_t, uint64_t) override {}
  bool consume(uint64_t, uint64_t) override { return true; }
};

}  // namespace

std::vector<std::unique_ptr<Phase>> make_mapped_phases(
    const MappedPeers &peers, const std::optional<ShmReduceScatterPlan> &rs,
    std::unique_ptr<Phase> rs_fallback, const std::optional<ShmAllGatherPlan> &ag,
    std::unique_ptr<Phase> ag_fallback) {
  auto choice = std::make_shared<Choice>();
  std::vector<std::unique_ptr<Phase>> phases;
  Posted rs_posted, ag_posted;
  if (rs) {
    rs_posted.used = true;
    rs_posted.mine = rs->send;
    rs_posted.extent.assign(static_cast<size_t>(peers.size), send_extent(*rs));
  }
  if (ag) {
    ag_posted.used = true;
    ag_posted.mine = ag->src;
    for (int r = 0; r < peers.size; ++r)
      ag_posted.extent.push_back(src_extent(*ag, r));
  }
  auto barrier = std::make_unique<BarrierPhase>();
  phases.push_back(std::make_unique<HeaderPhase>(peers, std::move(rs_posted), std::move(ag_posted),
                                                 choice, barrier.get()));
  if (rs)
    phases.push_back(
        std::make_unique<ReduceScatterSwitch>(peers, *rs, std::move(rs_fallback), choice));
  if (ag)
    phases.push_back(std::make_unique<AllGatherSwitch>(peers, *ag, std::move(ag_fallback), choice));
  phases.push_back(std::move(barrier));
  return phases;
}

}  // namespace zrt
