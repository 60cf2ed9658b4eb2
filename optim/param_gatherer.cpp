#include "optim/param_gatherer.hpp"

#include <algorithm>

#include "comm/dtype.hpp"

namespace zrt {

ParamGatherer::ParamGatherer(Communicator &comm, EngineMemory &memory, const Layout &layout,
                             ModelState &state, const EngineSettings &settings, CommStats &stats,
                             const int64_t &step)
    : comm_(comm),
      stats_(stats),
      step_(step),
      memory_(memory),
      layout_(layout),
      state_(state),
      dtype_(settings.dtype),
      esize_(dtype_size(settings.dtype)),
      max_live_elements_(settings.max_live_elements) {
  const size_t groups = layout.buckets().size();
  gathered_.resize(groups);
  refs_.assign(groups, 0);
  used_.assign(groups, 0);
  param_gathered_.assign(layout.params().size(), 0);
}

ParamGatherer::~ParamGatherer() {
  try {
    finish_prefetch();
  } catch (...) {
    // Already reported to the caller of the operation that failed.
  }
}

void ParamGatherer::fetch(int group, bool wait_now) {
  const BucketInfo &g = layout_.bucket(group);
  const size_t bytes = g.group_length * esize_;
  EngineBuffer &buf = gathered_[static_cast<size_t>(group)];
  // Reuse a spare buffer when one is large enough: the all-gathers overwrite all of it.
  for (auto it = spare_.begin(); it != spare_.end(); ++it)
    if (it->size() >= bytes) {
      buf = std::move(*it);
      spare_.erase(it);
      break;
    }
  if (buf.empty())
    buf = EngineBuffer(memory_, state_.params_on_host() ? Place::Device : state_.params_place(),
                       std::max(bytes, layout_.max_single_group() * esize_), Lifetime::Transient,
                       false);
  resident_elements_ += g.group_length;
  used_[static_cast<size_t>(group)] = ++use_clock_;
  ++fetches_;
  // One all-gather per bucket of the group, each into its place in the group's buffer,
  // after what the engine's stream still writes into the shard and after the program's work
  // so far (a reused buffer may still be read by it). With parameter offload the shard is
  // in host memory: its slice goes first to its own place in the buffer, on the engine's
  // stream (untimed: the step report times the step's copies, and gathers happen outside
  // steps too), and the all-gather runs in place from there.
  const bool from_host = state_.params_on_host();
  Event ready = memory_.ready();
  try {
    for (int k = group; k < group + g.group_buckets; ++k) {
      const BucketInfo &b = layout_.bucket(k);
      CollArgs a;
      a.kind = CollKind::AllGather;
      a.recv = buf.bytes() + (b.offset - g.group_offset) * esize_;
      if (from_host) {
        char *mine = static_cast<char *>(a.recv) +
                     (layout_.slice_begin(b, comm_.rank()) - b.offset) * esize_;
        memory_.copy(mine, state_.params(b.shard_offset), b.slice * esize_);
        a.send = mine;
        ready = memory_.recorded();
      } else {
        a.send = state_.params(b.shard_offset);
      }
      a.count = b.length;
      a.dtype = dtype_;
      a.ready = ready;
      a.purpose = {CollPurpose::What::ParamGather, k, step_};
      OwnedRequest r = post_owned(comm_, a, stats_);
      if (wait_now)
        r.wait();
      else
        prefetch_.push_back(std::move(r));
    }
  } catch (...) {
    // The group is not gathered: a later gather must communicate again rather than use
    // what arrived. MPI may still write into the buffer: it stays allocated until the end.
    resident_elements_ -= g.group_length;
    failed_.push_back(std::move(buf));
    buf = EngineBuffer();
    throw;
  }
  if (!wait_now) prefetch_group_ = group;
}

void ParamGatherer::finish_prefetch() {
  if (prefetch_.empty()) return;
  std::vector<OwnedRequest> requests = std::move(prefetch_);
  prefetch_.clear();
  const int group = prefetch_group_;
  prefetch_group_ = -1;
  try {
    for (OwnedRequest &r : requests)
      r.wait();
  } catch (...) {
    // As in fetch: the group was not gathered (-1: fetch failed and kept its buffer).
    if (group >= 0 && !gathered_[static_cast<size_t>(group)].empty()) {
      resident_elements_ -= layout_.bucket(group).group_length;
      failed_.push_back(std::move(gathered_[static_cast<size_t>(group)]));
      gathered_[static_cast<size_t>(group)] = EngineBuffer();
    }
    throw;
  }
}

void ParamGatherer::free_group(int group) {
  EngineBuffer &buf = gathered_[static_cast<size_t>(group)];
  if (buf.empty()) return;
  resident_elements_ -= layout_.bucket(group).group_length;
  if (spare_.size() < 2)
    spare_.push_back(std::move(buf));
  else
    buf = EngineBuffer();
}

void ParamGatherer::evict() {
  while (resident_elements_ > max_live_elements_) {
    int victim = -1;
    for (size_t g = 0; g < gathered_.size(); ++g) {
      if (gathered_[g].empty() || refs_[g] > 0 || static_cast<int>(g) == prefetch_group_) continue;
      if (victim < 0 || used_[g] < used_[static_cast<size_t>(victim)]) victim = static_cast<int>(g);
    }
    if (victim < 0) return;  // everything resident is in use
    free_group(victim);
    ++evictions_;
  }
}

void ParamGatherer::drop_all() {
  for (size_t g = 0; g < gathered_.size(); ++g)
    free_group(static_cast<int>(g));
  std::fill(refs_.begin(), refs_.end(), 0);
  std::fill(param_gathered_.begin(), param_gathered_.end(), 0);
  last_group_ = -1;
}

void ParamGatherer::gather(int index) {
  const ParamInfo &p = layout_.params()[static_cast<size_t>(index)];
  const int group = layout_.bucket(p.bucket).group;
  if (prefetch_group_ == group) finish_prefetch();
  if (gathered_[static_cast<size_t>(group)].empty()) fetch(group, true);
  used_[static_cast<size_t>(group)] = ++use_clock_;
  char &flag = param_gathered_[static_cast<size_t>(index)];
  if (!flag) {
    flag = 1;
    ++refs_[static_cast<size_t>(group)];
  }
  // Prefetch the next group in the direction the gathers are moving (forward walks from
  // the highest bucket down, backward up). Every rank decides the same way.
  int direction = last_group_ < 0 || group < last_group_ ? -1 : 1;
  if (group == last_group_) direction = 0;
  if (direction != 0) last_group_ = group;
  const int groups = static_cast<int>(gathered_.size());
  int next = direction < 0 ? group - 1 : group + layout_.bucket(group).group_buckets;
  if (next >= 0 && next < groups) next = layout_.bucket(next).group;
  if (direction != 0 && prefetch_.empty() && next >= 0 && next < groups &&
      gathered_[static_cast<size_t>(next)].empty())
    fetch(next, false);
  evict();
}

void ParamGatherer::release(int index) {
  const ParamInfo &p = layout_.params()[static_cast<size_t>(index)];
  char &flag = param_gathered_[static_cast<size_t>(index)];
  if (!flag)
    fail(ZRT_ERR_INVALID_STATE, "parameter '{}' is not gathered: nothing to release", p.name);
  flag = 0;
  --refs_[static_cast<size_t>(layout_.bucket(p.bucket).group)];
  evict();
}

void *ParamGatherer::data(int index) const {
  const ParamInfo &p = layout_.params()[static_cast<size_t>(index)];
  if (!param_gathered_[static_cast<size_t>(index)])
    fail(ZRT_ERR_INVALID_STATE,
         "parameter '{}' is not gathered: at stage 3 call zrt_param_gather before using it",
         p.name);
  const BucketInfo &b = layout_.bucket(p.bucket);
  return gathered_[static_cast<size_t>(b.group)].bytes() + (p.offset - b.group_offset) * esize_;
}

size_t ParamGatherer::buffer_bytes() const {
  size_t total = 0;
  for (const EngineBuffer &g : gathered_)
    total += g.size();
  return total;
}

size_t ParamGatherer::shared_bytes() const {
  size_t total = 0;
  for (const EngineBuffer &g : gathered_)
    if (g.place() == Place::Shared) total += g.size();
  return total;
}

std::vector<size_t> ParamGatherer::shared_buffers(const Layout &layout,
                                                  const EngineSettings &settings) {
  // The group in use and the one prefetched, of the size fetch() gives a buffer; more
  // resident groups, and split groups larger than that, go to host memory.
  const size_t bytes = layout.max_single_group() * dtype_size(settings.dtype);
  return {bytes, bytes};
}

}  // namespace zrt
