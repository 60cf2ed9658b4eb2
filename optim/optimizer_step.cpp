#include "optim/optimizer_step.hpp"

#include <algorithm>
#include <cmath>

#include "comm/dtype.hpp"
#include "runtime/agree.hpp"
#include "runtime/mpi_error.hpp"

namespace zrt {

OptimizerStep::OptimizerStep(const EngineSettings &settings, const KernelTable &kernels,
                             ThreadPool &threads, MPI_Comm control, EngineMemory &memory,
                             const Layout &layout, const StageLayout &stage, ModelState &state,
                             const ParamRegistry &params, int rank)
    : settings_(settings),
      kernels_(kernels),
      threads_(threads),
      control_(control),
      memory_(memory),
      on_device_(memory.on_device() && !state.offload_to_host()),
      layout_(layout),
      stage_(stage),
      state_(state),
      params_(params),
      rank_(rank),
      nranks_(layout.nranks()),
      esize_(dtype_size(settings.dtype)),
      owned_(stage.owned_ranges(layout, rank)) {
  for (const OwnedRange &o : owned_)
    (runs_on_device(o) ? device_ranges_ : host_ranges_).push_back(o);
}

bool OptimizerStep::runs_on_device(const OwnedRange &o) const {
  return memory_.on_device() && !state_.offloaded(o);
}

bool OptimizerStep::overflow(const bool *known) const {
  int local = 0;
  for (const OwnedRange &o : device_ranges_) {
    OptimRange r = state_.range(o);
    memory_.kernels().non_finite(memory_.stream(), r.grads, r.grad_dtype, r.count, &local);
  }
  if (!device_ranges_.empty()) memory_.synchronize();
  if (known != nullptr) {
    local |= *known ? 1 : 0;
  } else {
    for (size_t i = 0; i < owned_.size() && local == 0; ++i)
      if (!runs_on_device(owned_[i]) && range_non_finite(i)) local = 1;
  }
  watched_allreduce(control_, &local, 1, MPI_INT, MPI_MAX, "agreement on non-finite gradients");
  return local != 0;
}

bool OptimizerStep::range_non_finite(size_t owned_index) const {
  OptimRange r = state_.range(owned_[owned_index]);
  return kernels_.non_finite(r.grads, r.grad_dtype, r.count);
}

double OptimizerStep::range_sum_squares(size_t owned_index) const {
  OptimRange r = state_.range(owned_[owned_index]);
  const size_t blocks = (r.count + kNormBlock - 1) / kNormBlock;
  std::vector<double> block_sums(blocks, 0.0);
  threads_.parallel_for(blocks, 1, [&](size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) {
      size_t first = k * kNormBlock, count = std::min(kNormBlock, r.count - first);
      block_sums[k] = kernels_.sum_squares(static_cast<const char *>(r.grads) + first * esize_,
                                           r.grad_dtype, count);
    }
  });
  double sum = 0;
  for (double s : block_sums)
    sum += s;
  return sum;
}

std::vector<double> OptimizerStep::gather_partials(const std::vector<double> &mine,
                                                   size_t per_rank) const {
  std::vector<double> all(per_rank * static_cast<size_t>(nranks_));
  watched_allgather(control_, mine.data(), static_cast<int>(per_rank), MPI_DOUBLE, all.data(),
                    "all-gather of the optimizer's partial sums");
  return all;
}

double OptimizerStep::grad_norm_squared(const std::vector<double> *range_sums) const {
  // One partial per (bucket, slice owner), each a sum over fixed blocks; summed bucket by
  // bucket in rank order. Stage 0 computes every partial, the others theirs and gather.
  const size_t nb = layout_.buckets().size(), n = static_cast<size_t>(nranks_);
  std::vector<double> partial(nb * n, 0.0);
  std::vector<double> sums(owned_.size(), 0.0);
  // The device's ranges first (their sums come back through the stream), then the host's.
  std::vector<std::vector<double>> block_sums(owned_.size());
  for (size_t i = 0; i < owned_.size(); ++i) {
    if (!runs_on_device(owned_[i])) continue;
    OptimRange r = state_.range(owned_[i]);
    block_sums[i].assign((r.count + kNormBlock - 1) / kNormBlock, 0.0);
    memory_.kernels().block_sum_squares(memory_.stream(), r.grads, r.grad_dtype, r.count,
                                        block_sums[i].data());
  }
  if (!device_ranges_.empty()) memory_.synchronize();
  for (size_t i = 0; i < owned_.size(); ++i) {
    if (runs_on_device(owned_[i]))
      for (double s : block_sums[i])
        sums[i] += s;
    else
      sums[i] = range_sums != nullptr ? (*range_sums)[i] : range_sum_squares(i);
  }
  for (size_t i = 0; i < owned_.size(); ++i)
    partial[static_cast<size_t>(owned_[i].bucket) * n + static_cast<size_t>(owned_[i].owner)] =
        sums[i];
  if (!stage_.updates_everything) {
    std::vector<double> mine(nb);
    for (size_t b = 0; b < nb; ++b)
      mine[b] = partial[b * n + static_cast<size_t>(rank_)];
    std::vector<double> all = gather_partials(mine, nb);
    for (size_t r = 0; r < n; ++r)
      for (size_t b = 0; b < nb; ++b)
        partial[b * n + r] = all[r * nb + b];
  }
  double total = 0;
  for (double p : partial)
    total += p;
  return total;
}

OptimRange OptimizerStep::sub_range(const OptimRange &r, size_t begin, size_t count) const {
  OptimRange sub = r;
  sub.weights += begin;
  if (sub.m) sub.m += begin;
  if (sub.v) sub.v += begin;
  sub.grads = static_cast<const char *>(r.grads) + begin * esize_;
  if (sub.copy) sub.copy = static_cast<char *>(r.copy) + begin * dtype_size(r.copy_dtype);
  sub.count = count;
  return sub;
}

std::vector<OptimizerStep::Piece> OptimizerStep::param_pieces(
    const std::vector<OwnedRange> &ranges) const {
  std::vector<Piece> pieces;
  const std::vector<ParamInfo> &params = params_.all();
  for (const OwnedRange &o : ranges) {
    OptimRange r = state_.range(o);
    const BucketInfo &b = layout_.bucket(o.bucket);
    for (int p = b.first_param; p <= b.last_param; ++p) {
      const ParamInfo &info = params[static_cast<size_t>(p)];
      size_t from = std::max(info.offset, o.flat),
             to = std::min(info.offset + info.numel, o.flat + o.count);
      if (from < to)
        pieces.push_back({p, o.owner, from - info.offset, sub_range(r, from - o.flat, to - from),
                          state_.state_place(o) == Place::Device});
    }
  }
  return pieces;
}

void OptimizerStep::for_each_range(const std::vector<OwnedRange> &ranges,
                                   const std::function<void(int, const OptimRange &)> &kernel,
                                   const std::function<void(const OwnedRange &)> &done) const {
  constexpr size_t kGrain = 4096;
  if (!params_.custom_decay()) {
    // One weight decay for everything: whole owned ranges, padding included (zeros stay 0).
    for (const OwnedRange &o : ranges) {
      OptimRange r = state_.range(o);
      threads_.parallel_for(r.count, kGrain, [&](size_t begin, size_t end) {
        kernel(-1, sub_range(r, begin, end - begin));
      });
      if (done) done(o);
    }
    return;
  }
  // Per-parameter decay: parameter by parameter; large pieces split across the threads,
  // small ones shared out whole.
  std::vector<Piece> pieces = param_pieces(ranges), small;
  for (const Piece &p : pieces) {
    if (p.range.count < 8 * kGrain) {
      small.push_back(p);
      continue;
    }
    threads_.parallel_for(p.range.count, kGrain, [&](size_t begin, size_t end) {
      kernel(p.param, sub_range(p.range, begin, end - begin));
    });
  }
  threads_.parallel_for(small.size(), 1, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      kernel(small[i].param, small[i].range);
  });
  if (done)
    for (const OwnedRange &o : ranges)
      done(o);
}

void OptimizerStep::for_each_range_on_device(
    const std::function<void(int, const OptimRange &)> &kernel) const {
  if (!params_.custom_decay()) {
    for (const OwnedRange &o : device_ranges_)
      kernel(-1, state_.range(o));
    return;
  }
  for (const Piece &p : param_pieces(device_ranges_))
    kernel(p.param, p.range);
}

namespace {

AdamStep adam_base(const EngineSettings &settings, float grad_scale, double lr, int64_t step) {
  const double t = static_cast<double>(step + 1);
  AdamStep base;
  const double bc1 = 1 - std::pow(settings.beta1, t), bc2 = 1 - std::pow(settings.beta2, t);
  base.beta1 = static_cast<float>(settings.beta1);
  base.beta2 = static_cast<float>(settings.beta2);
  base.one_minus_beta1 = static_cast<float>(1 - settings.beta1);
  base.one_minus_beta2 = static_cast<float>(1 - settings.beta2);
  base.eps = static_cast<float>(settings.eps);
  base.step_size = static_cast<float>(-lr / bc1);
  base.inv_bc1 = static_cast<float>(1 / bc1);
  base.inv_sqrt_bc2 = static_cast<float>(1 / std::sqrt(bc2));
  base.grad_scale = grad_scale;
  return base;
}

}  // namespace

OptimizerStep::RangeKernel OptimizerStep::host_kernel(float grad_scale, double lr,
                                                      int64_t step) const {
  return make_kernel(grad_scale, lr, step, false);
}

OptimizerStep::RangeKernel OptimizerStep::device_kernel(float grad_scale, double lr,
                                                        int64_t step) const {
  return make_kernel(grad_scale, lr, step, true);
}

OptimizerStep::RangeKernel OptimizerStep::make_kernel(float grad_scale, double lr, int64_t step,
                                                      bool device) const {
  // The settings, the registry and the kernels outlive the kernel; the decays are read
  // when it runs (the engine redoes a speculative update whose decays changed since).
  auto decay_of = [this](int param) {
    return param < 0 ? settings_.weight_decay
                     : params_.weight_decay_of(param, settings_.weight_decay);
  };
  if (settings_.optimizer == ZRT_OPTIMIZER_SGD) {
    SgdStep base;
    base.lr = static_cast<float>(lr);
    base.momentum = static_cast<float>(settings_.momentum);
    base.nesterov = settings_.nesterov;
    base.grad_scale = grad_scale;
    return [this, base, decay_of, device](int param, const OptimRange &r) {
      SgdStep s = base;
      s.weight_decay = static_cast<float>(decay_of(param));
      if (device)
        memory_.kernels().sgd(memory_.stream(), s, r);
      else
        kernels_.sgd(s, r);
    };
  }
  const AdamStep base = adam_base(settings_, grad_scale, lr, step);
  return [this, base, decay_of, lr, device](int param, const OptimRange &r) {
    AdamStep s = base;
    double wd = decay_of(param);
    if (settings_.optimizer == ZRT_OPTIMIZER_ADAMW) s.decay = static_cast<float>(-lr * wd);
    if (settings_.optimizer == ZRT_OPTIMIZER_ADAM) s.l2 = static_cast<float>(wd);
    if (device)
      memory_.kernels().adam(memory_.stream(), s, r);
    else
      kernels_.adam(s, r);
  };
}

void OptimizerStep::update_range(size_t owned_index, const OptimRange &r,
                                 const RangeKernel &kernel) const {
  constexpr size_t kGrain = 4096;
  const OwnedRange &o = owned_[owned_index];
  if (!params_.custom_decay()) {
    threads_.parallel_for(r.count, kGrain, [&](size_t begin, size_t end) {
      kernel(-1, sub_range(r, begin, end - begin));
    });
    return;
  }
  // As for_each_range: parameter by parameter, large pieces split across the threads.
  const BucketInfo &b = layout_.bucket(o.bucket);
  std::vector<std::pair<int, OptimRange>> small;
  for (int p = b.first_param; p <= b.last_param; ++p) {
    const ParamInfo &info = params_.all()[static_cast<size_t>(p)];
    size_t from = std::max(info.offset, o.flat),
           to = std::min(info.offset + info.numel, o.flat + o.count);
    if (from >= to) continue;
    OptimRange piece = sub_range(r, from - o.flat, to - from);
    if (piece.count < 8 * kGrain) {
      small.emplace_back(p, piece);
      continue;
    }
    threads_.parallel_for(piece.count, kGrain, [&](size_t begin, size_t end) {
      kernel(p, sub_range(piece, begin, end - begin));
    });
  }
  threads_.parallel_for(small.size(), 1, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      kernel(small[i].first, small[i].second);
  });
}

void OptimizerStep::run(float grad_scale, double lr, int64_t step, bool device_only) {
  if (settings_.optimizer == ZRT_OPTIMIZER_LAMB) {
    // Never split (engine_settings.cpp): all of it on the device, or all on the host.
    const AdamStep base = adam_base(settings_, grad_scale, lr, step);
    if (on_device_) {
      run_lamb_on_device(base, lr);
    } else {
      run_lamb(base, lr);
      if (state_.offload_to_host())
        for (const OwnedRange &o : owned_)
          copy_back(o);
    }
    return;
  }
  // The device's ranges (a partial offload's, or all without offload) are queued on the
  // stream first, so that it works while the CPU updates its own.
  RangeKernel host = host_kernel(grad_scale, lr, step);
  if (push_ != nullptr && !device_only) {
    host = [this, update = std::move(host)](int param, const OptimRange &r) {
      update_and_push(r, [&](const OptimRange &piece) { update(param, piece); });
    };
  }
  if (!device_ranges_.empty()) for_each_range_on_device(device_kernel(grad_scale, lr, step));
  if (device_only || host_ranges_.empty()) return;
  // ZeRO-Offload: each range goes back to the device as soon as the CPU has updated it,
  // its copy overlapping the update of the next.
  std::function<void(const OwnedRange &)> copy_done;
  if (state_.offload_to_host()) copy_done = [this](const OwnedRange &o) { copy_back(o); };
  for_each_range(host_ranges_, host, copy_done);
}

void OptimizerStep::run_lamb_on_device(const AdamStep &base, double lr) const {
  // As run_lamb: the per-piece sums come to the host, the trust ratios go back as scalars.
  std::vector<Piece> pieces = param_pieces();
  std::vector<std::pair<double, double>> piece_sums(pieces.size());
  DeviceKernels &k = memory_.kernels();
  for (size_t i = 0; i < pieces.size(); ++i)
    k.lamb_moments(memory_.stream(), lamb_step(base, pieces[i].param), pieces[i].range,
                   &piece_sums[i].first, &piece_sums[i].second);
  memory_.synchronize();
  const std::vector<float> lr_trust = lamb_rates(pieces, piece_sums, lr);
  for (const Piece &piece : pieces)
    k.lamb_apply(memory_.stream(), lamb_step(base, piece.param), piece.range,
                 lr_trust[static_cast<size_t>(piece.param)]);
}

void OptimizerStep::copy_back(const OwnedRange &o, const void *from) {
  // The host's fp32 weights to the parameters, converted on the host on the way, into the
  // host shard of the gradient (whose values the optimizer has used) when the parameters
  // are on the device, straight into them when they are offloaded too.
  const float *w = state_.range(o).weights;
  void *dst = state_.params(o.index(stage_.params));
  const size_t bytes = o.count * esize_;
  if (from == nullptr && !settings_.mixed()) from = w;
  if (from != nullptr) {
    memory_.offload_copy(dst, from, bytes);
  } else if (state_.params_on_host()) {
    kernels_.convert(w, dst, settings_.dtype, o.count);
  } else {
    char *staging = state_.host_grads(o.state);
    kernels_.convert(w, staging, settings_.dtype, o.count);
    memory_.offload_copy(dst, staging, bytes);
  }
}

void OptimizerStep::refresh_compute_copies(bool all) {
  const bool mixed = settings_.mixed();
  if (state_.offload_to_host()) {
    // run() copied each range as it finished; what the host waits for now is the part of
    // the copies that the update did not hide (and a partial offload's device update).
    if (all) {
      for (const OwnedRange &o : host_ranges_)
        copy_back(o);
      if (mixed)
        for (const OwnedRange &o : device_ranges_) {
          OptimRange r = state_.range(o);
          memory_.kernels().convert(memory_.stream(), r.weights, r.copy, settings_.dtype, r.count);
        }
    }
    memory_.offload_synchronize();
    return;
  }
  if (!all || !mixed) return;  // the kernels wrote the compute copies themselves
  for (const OwnedRange &o : owned_) {
    OptimRange r = state_.range(o);
    if (on_device_)
      memory_.kernels().convert(memory_.stream(), r.weights, r.copy, settings_.dtype, r.count);
    else
      kernels_.convert(r.weights, r.copy, settings_.dtype, r.count);
  }
}

AdamStep OptimizerStep::lamb_step(const AdamStep &base, int param) const {
  AdamStep s = base;
  s.weight_decay = static_cast<float>(params_.weight_decay_of(param, settings_.weight_decay));
  return s;
}

std::vector<float> OptimizerStep::lamb_rates(
    const std::vector<Piece> &pieces, const std::vector<std::pair<double, double>> &piece_sums,
    double lr) const {
  // A parameter's trust ratio needs its norms over all its pieces on all ranks, summed in
  // rank order. A rank may hold several pieces of one parameter (one per bucket it spans),
  // added in bucket order.
  const size_t np = static_cast<size_t>(params_.count()), n = static_cast<size_t>(nranks_);
  std::vector<double> sums(2 * np * n, 0.0);  // [owner][param][w, u]
  for (size_t i = 0; i < pieces.size(); ++i) {
    size_t at =
        (static_cast<size_t>(pieces[i].owner) * np + static_cast<size_t>(pieces[i].param)) * 2;
    sums[at] += piece_sums[i].first;
    sums[at + 1] += piece_sums[i].second;
  }
  if (!stage_.updates_everything) {
    std::vector<double> mine(
        sums.begin() + static_cast<long>(static_cast<size_t>(rank_) * np * 2),
        sums.begin() + static_cast<long>((static_cast<size_t>(rank_) + 1) * np * 2));
    sums = gather_partials(mine, 2 * np);
  }
  std::vector<float> lr_trust(np);
  for (size_t p = 0; p < np; ++p) {
    double w = 0, u = 0;
    for (size_t r = 0; r < n; ++r) {
      w += sums[(r * np + p) * 2];
      u += sums[(r * np + p) * 2 + 1];
    }
    lr_trust[p] = lamb_rate(w, u, lr);
  }
  return lr_trust;
}

float OptimizerStep::lamb_rate(double w_sq, double u_sq, double lr) {
  // DeepSpeed's FusedLamb bounds the trust ratio to [0.01, 10].
  const double trust =
      w_sq > 0 && u_sq > 0 ? std::clamp(std::sqrt(w_sq) / std::sqrt(u_sq), 0.01, 10.0) : 1.0;
  return static_cast<float>(lr * trust);
}

void OptimizerStep::run_lamb(const AdamStep &base, double lr) const {
  std::vector<Piece> pieces = param_pieces();
  std::vector<std::pair<double, double>> piece_sums(pieces.size());
  // A parameter whose only piece is this one (not cut by a slice or bucket boundary) has
  // its trust ratio as soon as its moments are updated: lamb_rates would add only zeros to
  // its sums (x + 0 is x), so it is applied right away, while its weights and moments may
  // still be in the cache (a BERT-base 768 x 768 matrix's four arrays take 9.4 MB). The
  // others wait for every rank's sums. The same bits; BERT-base's LAMB step on 2 ranks took
  // 59.0-62.0 ms against 60.1-64.3 ms applying everything after (medians of 12 steps, three
  // runs each, alternated, 2026-12-06).
  const std::vector<ParamInfo> &params = params_.all();
  auto whole = [&](const Piece &piece) {
    return piece.range.count == params[static_cast<size_t>(piece.param)].numel;
  };
  threads_.parallel_for(pieces.size(), 1, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const AdamStep step = lamb_step(base, pieces[i].param);
      kernels_.lamb_moments(step, pieces[i].range, &piece_sums[i].first, &piece_sums[i].second);
      if (whole(pieces[i])) {
        const float rate = lamb_rate(piece_sums[i].first, piece_sums[i].second, lr);
        update_and_push(pieces[i].range,
                        [&](const OptimRange &r) { kernels_.lamb_apply(step, r, rate); });
      }
    }
  });
  const std::vector<float> lr_trust = lamb_rates(pieces, piece_sums, lr);
  threads_.parallel_for(pieces.size(), 1, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      if (!whole(pieces[i])) {
        const AdamStep step = lamb_step(base, pieces[i].param);
        const float rate = lr_trust[static_cast<size_t>(pieces[i].param)];
        update_and_push(pieces[i].range,
                        [&](const OptimRange &r) { kernels_.lamb_apply(step, r, rate); });
      }
  });
}

bool OptimizerStep::updates_within(const char *base, size_t bytes) const {
  if (on_device_ || !device_ranges_.empty()) return false;
  for (const OwnedRange &o : owned_) {
    const OptimRange r = state_.range(o);
    const char *w = reinterpret_cast<const char *>(r.weights);
    const size_t n = r.count * sizeof(float);
    if (r.count > 0 && (w < base || n > bytes || static_cast<size_t>(w - base) > bytes - n))
      return false;
  }
  return true;
}

void OptimizerStep::update_and_push(const OptimRange &r,
                                    const std::function<void(const OptimRange &)> &update) const {
  if (push_ == nullptr) {
    update(r);
    return;
  }
  // Every element goes through the same operations wherever a range is cut (kernels.hpp),
  // so the pieces give the bits of the whole.
  for (size_t at = 0; at < r.count; at += ParamPush::kPiece) {
    const OptimRange piece = sub_range(r, at, std::min(ParamPush::kPiece, r.count - at));
    update(piece);
    push_->push(piece);
  }
}

}  // namespace zrt
