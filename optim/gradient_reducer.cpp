#include "optim/gradient_reducer.hpp"

#include <algorithm>
#include <functional>

#include "comm/dtype.hpp"
#include "runtime/log.hpp"

namespace zrt {

namespace {

// Bucket buffers: two for buckets of whole parameters (backward writes one while the other
// is reduced), as large as the two largest such buckets, and one for the largest parameter
// cut into several buckets, whose gradient backward writes as one tensor. Elements.
std::vector<size_t> bucket_buffers(const Layout &layout, const StageLayout &stage) {
  std::vector<size_t> sizes;
  if (stage.reduction != Reduction::ReduceScatterBuckets) return sizes;
  for (const BucketInfo &b : layout.buckets())
    if (b.group_buckets == 1) sizes.push_back(b.length);
  std::sort(sizes.begin(), sizes.end(), std::greater<>());
  sizes.resize(std::min<size_t>(sizes.size(), 2));
  if (layout.max_split_group() > 0) sizes.push_back(layout.max_split_group());
  return sizes;
}

// Landing slices: stage 1's reduce-scatter always lands in one; stages 2-3 land in the
// shard directly on the first micro-step and need them only to accumulate, or always when
// the shard is on the host.
size_t landings(const StageLayout &stage, const EngineSettings &settings, bool to_host) {
  return stage.reduction == Reduction::ReduceScatterToSlice ||
                 (stage.reduction == Reduction::ReduceScatterBuckets &&
                  (settings.accumulation_steps > 1 || to_host))
             ? 2
             : 0;
}

// Per group (indexed by its first bucket), the [begin, end) element ranges of its buffer
// that no parameter covers. A group's buckets hold whole parameters or one parameter's
// pieces, so its parameters, sorted by offset, leave these gaps (the buckets' padding).
std::vector<std::vector<std::pair<size_t, size_t>>> group_gaps(const Layout &layout) {
  std::vector<std::vector<std::pair<size_t, size_t>>> covered(layout.buckets().size()),
      gaps(layout.buckets().size());
  for (const ParamInfo &p : layout.params()) {
    const BucketInfo &b = layout.bucket(p.bucket);
    covered[static_cast<size_t>(b.group)].emplace_back(p.offset - b.group_offset,
                                                       p.offset - b.group_offset + p.numel);
  }
  for (const BucketInfo &b : layout.buckets()) {
    if (b.group != b.index) continue;
    auto &c = covered[static_cast<size_t>(b.index)];
    std::sort(c.begin(), c.end());
    size_t at = 0;
    for (const auto &[begin, end] : c) {
      if (begin > at) gaps[static_cast<size_t>(b.index)].emplace_back(at, begin);
      at = std::max(at, end);
    }
    if (at < b.group_length) gaps[static_cast<size_t>(b.index)].emplace_back(at, b.group_length);
  }
  return gaps;
}

size_t landing_slice_bytes(const Layout &layout, size_t esize) {
  return layout.max_bucket() / static_cast<size_t>(layout.nranks()) * esize;
}

}  // namespace

std::vector<size_t> GradientReducer::initial_buffers(const Layout &layout, const StageLayout &stage,
                                                     const EngineSettings &settings, bool to_host) {
  const size_t esize = dtype_size(settings.dtype);
  std::vector<size_t> bytes;
  for (size_t n : bucket_buffers(layout, stage))
    bytes.push_back(n * esize);
  for (size_t i = 0; i < landings(stage, settings, to_host); ++i)
    bytes.push_back(landing_slice_bytes(layout, esize));
  return bytes;
}

GradientReducer::GradientReducer(Communicator &comm, EngineMemory &memory, const Layout &layout,
                                 const StageLayout &stage, ModelState &state,
                                 const EngineSettings &settings, CommStats &stats,
                                 const int64_t &step)
    : comm_(comm),
      stats_(stats),
      step_(step),
      memory_(memory),
      layout_(layout),
      stage_(stage),
      state_(state),
      dtype_(settings.dtype),
      esize_(dtype_size(settings.dtype)),
      overlap_(settings.overlap),
      accumulation_steps_(settings.accumulation_steps),
      rank_(comm.rank()),
      to_host_(state.offload_to_host()) {
  // Both kinds are what the reductions read or write: in the node's shared window where the
  // engine has one.
  const Place near = memory.on_device() ? Place::Device : Place::Shared;
  buckets_ = BufferSet(memory, near);
  landing_ = BufferSet(memory, near);
  landing_bytes_ = landing_slice_bytes(layout, esize_);
  // As initial_buffers() counts them.
  for (size_t n : bucket_buffers(layout, stage))
    buckets_.add(n * esize_);
  for (size_t i = 0; i < landings(stage, settings, to_host_); ++i)
    landing_.add(landing_bytes_);
  if (to_host_ && accumulation_steps_ > 1)
    host_landing_ = EngineBuffer(memory, Place::Pinned, landing_bytes_, Lifetime::Transient);
  buffer_of_.assign(layout.buckets().size(), -1);
  group_zeroed_.assign(layout.buckets().size(), 0);
  handed_.assign(layout.params().size(), Handed::None);
  if (stage.reduction == Reduction::ReduceScatterBuckets) group_gaps_ = group_gaps(layout);
  ready_.assign(layout.params().size(), 0);
  bucket_ready_.assign(layout.buckets().size(), 0);
}

GradientReducer::~GradientReducer() {
  try {
    finish();
  } catch (...) {
    // Already reported to the caller of the operation that failed.
  }
}

void *GradientReducer::grad_data(int index, bool may_overwrite, bool *overwrite) {
  const ParamInfo &p = layout_.params()[static_cast<size_t>(index)];
  if (ready_[static_cast<size_t>(index)])
    fail(ZRT_ERR_INVALID_STATE,
         "the gradient of '{}' was already made ready in this micro-step; ask for its buffer "
         "before zrt_param_grad_ready",
         p.name);
  if (stage_.reduction != Reduction::ReduceScatterBuckets) {
    // The gradient accumulates in place in the full buffer, zeroed between steps.
    if (overwrite) *overwrite = false;
    return state_.grads(p.offset);
  }
  // Every micro-step writes a fresh bucket buffer: nothing in it is worth keeping, so a
  // program that overwrites spares the engine zeroing it (a step's whole gradient volume).
  Handed &handed = handed_[static_cast<size_t>(index)];
  const bool first = handed == Handed::None;
  const Handed mode = first ? (may_overwrite ? Handed::Overwrite : Handed::Add) : handed;
  const BucketInfo &b = layout_.bucket(p.bucket);
  char *group = group_buffer(p.bucket, mode == Handed::Add);
  // Its group was taken for another parameter's overwrite: zero this one's part, once.
  if (first && mode == Handed::Add && !group_zeroed_[static_cast<size_t>(b.group)]) zero_param(p);
  // Decided only once the buffer is handed out: a call that failed (no memory for a buffer)
  // decides nothing, and a retry with zrt_param_grad_data still gets zeros.
  handed = mode;
  if (overwrite) *overwrite = mode == Handed::Overwrite;
  return group + (p.offset - b.group_offset) * esize_;
}

void GradientReducer::zero_param(const ParamInfo &p) {
  const BucketInfo &b = layout_.bucket(p.bucket);
  memory_.zero(buckets_.place(),
               buckets_.data(buffer_of_[static_cast<size_t>(b.group)]) +
                   (p.offset - b.group_offset) * esize_,
               p.numel * esize_);
  memory_.program_waits();
}

char *GradientReducer::group_buffer(int bucket, bool zero_whole) {
  const BucketInfo &b = layout_.bucket(bucket);
  int &slot = buffer_of_[static_cast<size_t>(b.group)];
  if (slot < 0) {
    const size_t bytes = b.group_length * esize_;
    while ((slot = buckets_.take(bytes)) < 0) {
      if (!in_flight_.empty()) {
        complete_oldest();
      } else {
        // Backward is writing more buckets than there are buffers before any is complete
        // (gradients out of bucket order): grow rather than stall.
        buckets_.add(std::max(bytes, layout_.max_single_group() * esize_));
        log::debug("engine: gradient bucket buffer #{} added", buckets_.count());
      }
    }
    char *data = buckets_.data(slot);
    if (zero_whole) {
      memory_.zero(buckets_.place(), data, bytes);
    } else {
      for (const auto &[begin, end] : group_gaps_[static_cast<size_t>(b.group)])
        memory_.zero(buckets_.place(), data + begin * esize_, (end - begin) * esize_);
      // A parameter of the group whose buffer is handed out later to add, or never, has its
      // part zeroed then (grad_data, post_bucket).
    }
    group_zeroed_[static_cast<size_t>(b.group)] = zero_whole;
    memory_.program_waits();  // the program writes or adds its gradients after the zeros
  }
  return buckets_.data(slot);
}

int GradientReducer::take_landing() {
  int s;
  while ((s = landing_.take(landing_bytes_)) < 0) {
    if (!in_flight_.empty())
      complete_oldest();
    else
      landing_.add(landing_bytes_);
  }
  return s;
}

void GradientReducer::grad_ready(int index) {
  const ParamInfo &p = layout_.params()[static_cast<size_t>(index)];
  char &ready = ready_[static_cast<size_t>(index)];
  if (ready)
    fail(ZRT_ERR_INVALID_STATE, "zrt_param_grad_ready was called twice for '{}' in one micro-step",
         p.name);
  ready = 1;
  for (int k = p.bucket; k < p.bucket + p.buckets; ++k)
    ++bucket_ready_[static_cast<size_t>(k)];
  post_ready();
  if (landed_ && last_micro_step()) land_completed();
}

void GradientReducer::set_offload_hooks(std::function<void(int, Event)> landed,
                                        std::function<void()> settle) {
  landed_ = std::move(landed);
  settle_ = std::move(settle);
}

void GradientReducer::land_completed() {
  while (!in_flight_.empty() && in_flight_.front().request.test())
    complete_oldest();
}

void GradientReducer::post_ready() {
  if (!reduces_now()) return;
  const auto &buckets = layout_.buckets();
  while (next_post_ < static_cast<int>(buckets.size())) {
    const BucketInfo &b = buckets[static_cast<size_t>(next_post_)];
    if (bucket_ready_[static_cast<size_t>(next_post_)] != b.last_param - b.first_param + 1) break;
    post_bucket(next_post_++);
  }
}

void GradientReducer::post_bucket(int bucket) {
  const BucketInfo &b = layout_.bucket(bucket);
  CollArgs a;
  a.dtype = dtype_;
  a.op = ZRT_OP_AVG;
  a.count = b.length;
  a.purpose = {CollPurpose::What::GradientBucket, bucket, step_};
  Pending pending{bucket, OwnedRequest{}, -1};
  switch (stage_.reduction) {
    case Reduction::AllReduce:
      a.kind = CollKind::AllReduce;
      a.send = a.recv = state_.grads(b.offset);
      break;
    case Reduction::ReduceScatterToSlice:
      a.kind = CollKind::ReduceScatter;
      pending.landing = take_landing();
      a.send = state_.grads(b.offset);
      a.recv = landing_.data(pending.landing);
      break;
    case Reduction::ReduceScatterBuckets: {
      a.kind = CollKind::ReduceScatter;
      char *group = group_buffer(bucket);  // zeroed whole if nobody asked for it
      // A parameter made ready without asking for its buffer has a zero gradient; where its
      // group's buffer was taken for others to overwrite, its part holds no zeros yet. (A
      // parameter cut into several buckets is zeroed whole at its first one's post.)
      if (!group_zeroed_[static_cast<size_t>(b.group)])
        for (int i = b.first_param; i <= b.last_param; ++i)
          if (Handed &h = handed_[static_cast<size_t>(i)]; h == Handed::None) {
            zero_param(layout_.params()[static_cast<size_t>(i)]);
            h = Handed::Add;
          }
      a.send = group + (b.offset - b.group_offset) * esize_;
      if (micro_ == 0 && !to_host(b)) {
        a.recv = state_.grads(b.shard_offset);  // the first micro-step writes directly
        // Read next by the gradient norm after backward, or the next micro-step's sums.
        a.recv_cold = true;
      } else {
        pending.landing = take_landing();
        a.recv = landing_.data(pending.landing);
      }
      break;
    }
  }
  // The gradients the program wrote, and whatever the engine's stream still does to the
  // buffers (zeroing, the previous use of a landing slice), come first.
  a.ready = memory_.ready();
  pending.request = post_owned(comm_, a, stats_);
  in_flight_.push_back(std::move(pending));
  // Without overlap every reduction completes before backward continues.
  if (!overlap_) drain();
}

void GradientReducer::land(const BucketInfo &b, int landing) {
  land_slice(b, landing);
  // The last micro-step's slice is the gradient the optimizer reads: on the host, the CPU
  // may update it once the copy (the engine's stream so far) is done.
  if (to_host(b) && landed_ && last_micro_step() && stage_.reduction != Reduction::AllReduce)
    landed_(b.index, memory_.recorded());
}

void GradientReducer::land_slice(const BucketInfo &b, int landing) {
  const size_t bytes = b.slice * esize_;
  switch (stage_.reduction) {
    case Reduction::AllReduce:
      return;
    case Reduction::ReduceScatterToSlice:
      if (to_host(b))
        memory_.offload_copy(state_.host_grads(b.shard_offset), landing_.data(landing), bytes);
      else
        memory_.copy(state_.grads(layout_.slice_begin(b, rank_)), landing_.data(landing), bytes);
      return;
    case Reduction::ReduceScatterBuckets:
      if (landing < 0) return;  // it landed in the shard itself
      if (to_host(b) && micro_ == 0) {
        // Overlapped with the rest of backward: the copy runs on the engine's stream.
        memory_.offload_copy(state_.host_grads(b.shard_offset), landing_.data(landing), bytes);
      } else if (to_host(b)) {
        memory_.offload_copy(host_landing_.bytes(), landing_.data(landing), bytes);
        memory_.offload_synchronize();
        accumulate(state_.host_grads(b.shard_offset), host_landing_.bytes(), b.slice, dtype_);
      } else if (memory_.on_device()) {
        memory_.kernels().accumulate(memory_.stream(), state_.grads(b.shard_offset),
                                     landing_.data(landing), b.slice, dtype_);
      } else {
        accumulate(state_.grads(b.shard_offset), landing_.data(landing), b.slice, dtype_);
      }
      return;
  }
}

void GradientReducer::complete_oldest() {
  Pending p = std::move(in_flight_.front());
  in_flight_.pop_front();
  p.request.wait();
  const BucketInfo &b = layout_.bucket(p.bucket);
  land(b, p.landing);
  // Buckets complete in order: the group's last one frees its buffer.
  if (stage_.reduction == Reduction::ReduceScatterBuckets &&
      b.index == b.group + b.group_buckets - 1) {
    int &slot = buffer_of_[static_cast<size_t>(b.group)];
    buckets_.give_back(slot);
    slot = -1;
  }
  // A later reduction into it waits for what the stream does with it now (ready()).
  if (p.landing >= 0) landing_.give_back(p.landing);
}

void GradientReducer::drain() {
  while (!in_flight_.empty())
    complete_oldest();
}

void GradientReducer::finish() {
  drain();
  // With ZeRO-Offload what is left of the gradients' copies to the host: the part of them
  // that backward did not hide (the wait is for the whole stream: a partial offload's
  // device part as well).
  if (to_host_)
    memory_.offload_synchronize();
  else
    memory_.synchronize();
}

int GradientReducer::first_not_ready() const {
  for (size_t i = 0; i < ready_.size(); ++i)
    if (!ready_[i]) return static_cast<int>(i);
  return -1;
}

void GradientReducer::abandon_micro_step() {
  if (reduces_now()) {
    for (size_t i = 0; i < ready_.size(); ++i)
      if (!ready_[i]) {
        ready_[i] = 1;
        const ParamInfo &p = layout_.params()[i];
        for (int k = p.bucket; k < p.bucket + p.buckets; ++k)
          ++bucket_ready_[static_cast<size_t>(k)];
      }
    post_ready();
    drain();
  }
  end_accumulation();
}

void GradientReducer::next_micro_step() {
  ++micro_;
  reset_readiness();
}

void GradientReducer::end_accumulation() {
  if (settle_) settle_();  // the CPU step reads the host shard no more
  // Host buffers the stream may still copy into or out of are zeroed after it.
  memory_.synchronize();
  // Stages 2-3 write the shard whole on the first micro-step (each bucket's reduced slice
  // lands in it, or is copied to the host shard, and the slices tile the shard): zeros
  // there would never be read.
  if (stage_.reduction != Reduction::ReduceScatterBuckets) {
    state_.zero_grads(memory_);
    memory_.program_waits();  // the program writes the next gradients into the zeros
  }
  micro_ = 0;
  reset_readiness();
}

void GradientReducer::reset_readiness() {
  std::fill(ready_.begin(), ready_.end(), 0);
  std::fill(handed_.begin(), handed_.end(), Handed::None);
  std::fill(bucket_ready_.begin(), bucket_ready_.end(), 0);
  next_post_ = 0;
}

bool GradientReducer::idle() const {
  return micro_ == 0 && in_flight_.empty() &&
         std::none_of(ready_.begin(), ready_.end(), [](char r) { return r != 0; });
}

}  // namespace zrt
