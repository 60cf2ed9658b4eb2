#include "optim/optimizer_step.hpp"

#include <algorithm>
#include <cmath>

#include "comm/dtype.hpp"
#include "runtime/mpi_error.hpp"

namespace zrt {

OptimizerStep::OptimizerStep(const EngineSettings &settings, const KernelTable &kernels,
                             ThreadPool &threads, MPI_Comm control, const Layout &layout,
                             const StageLayout &stage, ModelState &state,
                             const ParamRegistry &params, int rank)
    : settings_(settings),
      kernels_(kernels),
      threads_(threads),
      control_(control),
      layout_(layout),
      stage_(stage),
      state_(state),
      params_(params),
      rank_(rank),
      nranks_(layout.nranks()),
      esize_(dtype_size(settings.dtype)),
      owned_(stage.owned_ranges(layout, rank)) {}

bool OptimizerStep::overflow() const {
  int local = 0;
  for (const OwnedRange &o : owned_) {
    OptimRange r = state_.range(o);
    if (kernels_.non_finite(r.grads, r.grad_dtype, r.count)) {
      local = 1;
      break;
    }
  }
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &local, 1, MPI_INT, MPI_MAX, control_),
            "MPI_Allreduce(overflow)");
  return local != 0;
}

std::vector<double> OptimizerStep::gather_partials(const std::vector<double> &mine,
                                                   size_t per_rank) const {
  std::vector<double> all(per_rank * static_cast<size_t>(nranks_));
  check_mpi(MPI_Allgather(mine.data(), static_cast<int>(per_rank), MPI_DOUBLE, all.data(),
                          static_cast<int>(per_rank), MPI_DOUBLE, control_),
            "MPI_Allgather(partial sums)");
  return all;
}

double OptimizerStep::grad_norm_squared() const {
  // One partial per (bucket, slice owner), each a sum over fixed blocks; summed bucket by
  // bucket in rank order. Stage 0 computes every partial, the others theirs and gather.
  const size_t nb = layout_.buckets().size(), n = static_cast<size_t>(nranks_);
  std::vector<double> partial(nb * n, 0.0);
  for (const OwnedRange &o : owned_) {
    OptimRange r = state_.range(o);
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
    partial[static_cast<size_t>(o.bucket) * n + static_cast<size_t>(o.owner)] = sum;
  }
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

std::vector<OptimizerStep::Piece> OptimizerStep::param_pieces() const {
  std::vector<Piece> pieces;
  const std::vector<ParamInfo> &params = params_.all();
  for (const OwnedRange &o : owned_) {
    OptimRange r = state_.range(o);
    const BucketInfo &b = layout_.bucket(o.bucket);
    for (int p = b.first_param; p <= b.last_param; ++p) {
      const ParamInfo &info = params[static_cast<size_t>(p)];
      size_t from = std::max(info.offset, o.flat),
             to = std::min(info.offset + info.numel, o.flat + o.count);
      if (from < to)
        pieces.push_back({p, o.owner, from - info.offset, sub_range(r, from - o.flat, to - from)});
    }
  }
  return pieces;
}

void OptimizerStep::for_each_range(
    const std::function<void(int, const OptimRange &)> &kernel) const {
  constexpr size_t kGrain = 4096;
  if (!params_.custom_decay()) {
    // One weight decay for everything: whole owned ranges, padding included (zeros stay 0).
    for (const OwnedRange &o : owned_) {
      OptimRange r = state_.range(o);
      threads_.parallel_for(r.count, kGrain, [&](size_t begin, size_t end) {
        kernel(-1, sub_range(r, begin, end - begin));
      });
    }
    return;
  }
  // Per-parameter decay: parameter by parameter; large pieces split across the threads,
  // small ones shared out whole.
  std::vector<Piece> pieces = param_pieces(), small;
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
}

void OptimizerStep::run(float grad_scale, double lr, int64_t step) {
  const double t = static_cast<double>(step + 1);
  auto decay_of = [&](int param) {
    return param < 0 ? settings_.weight_decay
                     : params_.weight_decay_of(param, settings_.weight_decay);
  };
  if (settings_.optimizer == ZRT_OPTIMIZER_SGD) {
    SgdStep base;
    base.lr = static_cast<float>(lr);
    base.momentum = static_cast<float>(settings_.momentum);
    base.nesterov = settings_.nesterov;
    base.grad_scale = grad_scale;
    for_each_range([&](int param, const OptimRange &r) {
      SgdStep s = base;
      s.weight_decay = static_cast<float>(decay_of(param));
      kernels_.sgd(s, r);
    });
    return;
  }
  AdamStep base;
  const double bc1 = 1 - std::pow(settings_.beta1, t), bc2 = 1 - std::pow(settings_.beta2, t);
  base.beta1 = static_cast<float>(settings_.beta1);
  base.beta2 = static_cast<float>(settings_.beta2);
  base.one_minus_beta1 = static_cast<float>(1 - settings_.beta1);
  base.one_minus_beta2 = static_cast<float>(1 - settings_.beta2);
  base.eps = static_cast<float>(settings_.eps);
  base.step_size = static_cast<float>(-lr / bc1);
  base.inv_bc1 = static_cast<float>(1 / bc1);
  base.inv_sqrt_bc2 = static_cast<float>(1 / std::sqrt(bc2));
  base.grad_scale = grad_scale;
  if (settings_.optimizer == ZRT_OPTIMIZER_LAMB) {
    run_lamb(base, lr);
    return;
  }
  for_each_range([&](int param, const OptimRange &r) {
    AdamStep s = base;
    double wd = decay_of(param);
    if (settings_.optimizer == ZRT_OPTIMIZER_ADAMW) s.decay = static_cast<float>(-lr * wd);
    if (settings_.optimizer == ZRT_OPTIMIZER_ADAM) s.l2 = static_cast<float>(wd);
    kernels_.adam(s, r);
  });
}

void OptimizerStep::run_lamb(const AdamStep &base, double lr) const {
  // A parameter's trust ratio needs its norms over all its pieces on all ranks, summed in
  // rank order.
  std::vector<Piece> pieces = param_pieces();
  const size_t np = static_cast<size_t>(params_.count()), n = static_cast<size_t>(nranks_);
  std::vector<double> sums(2 * np * n, 0.0);  // [owner][param][w, u]
  std::vector<std::pair<double, double>> piece_sums(pieces.size());
  auto step_for = [&](int param) {
    AdamStep s = base;
    s.weight_decay = static_cast<float>(params_.weight_decay_of(param, settings_.weight_decay));
    return s;
  };
  threads_.parallel_for(pieces.size(), 1, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      kernels_.lamb_moments(step_for(pieces[i].param), pieces[i].range, &piece_sums[i].first,
                            &piece_sums[i].second);
  });
  for (size_t i = 0; i < pieces.size(); ++i) {
    size_t at =
        (static_cast<size_t>(pieces[i].owner) * np + static_cast<size_t>(pieces[i].param)) * 2;
    sums[at] = piece_sums[i].first;
    sums[at + 1] = piece_sums[i].second;
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
    // DeepSpeed's FusedLamb bounds the trust ratio to [0.01, 10].
    double trust = w > 0 && u > 0 ? std::clamp(std::sqrt(w) / std::sqrt(u), 0.01, 10.0) : 1.0;
    lr_trust[p] = static_cast<float>(lr * trust);
  }
  threads_.parallel_for(pieces.size(), 1, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      kernels_.lamb_apply(step_for(pieces[i].param), pieces[i].range,
                          lr_trust[static_cast<size_t>(pieces[i].param)]);
  });
}

}  // namespace zrt
