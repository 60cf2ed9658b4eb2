#include "optim/engine.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "comm/dtype.hpp"
#include "memory/memory_part.hpp"
#include "optim/engine_part.hpp"
#include "runtime/agree.hpp"
#include "runtime/log.hpp"
#include "runtime/mpi_error.hpp"

namespace zrt {

namespace {

// Adds count values of src into dst in the compute dtype (gradient accumulation).
void accumulate(void *dst, const void *src, size_t count, zrt_dtype_t dtype) {
  switch (dtype) {
    case ZRT_DTYPE_FP32: {
      auto *d = static_cast<float *>(dst);
      const auto *s = static_cast<const float *>(src);
      for (size_t i = 0; i < count; ++i)
        d[i] += s[i];
      return;
    }
    case ZRT_DTYPE_BF16: {
      auto *d = static_cast<uint16_t *>(dst);
      const auto *s = static_cast<const uint16_t *>(src);
      for (size_t i = 0; i < count; ++i)
        d[i] = float_to_bf16(bf16_to_float(d[i]) + bf16_to_float(s[i]));
      return;
    }
    case ZRT_DTYPE_FP16: {
      auto *d = static_cast<uint16_t *>(dst);
      const auto *s = static_cast<const uint16_t *>(src);
      for (size_t i = 0; i < count; ++i)
        d[i] = float_to_fp16(fp16_to_float(d[i]) + fp16_to_float(s[i]));
      return;
    }
    default:
      break;
  }
  fail(ZRT_ERR_INTERNAL, "accumulate: dtype {}", dtype_name(dtype));
}

// Converts count values between dtypes through fp32 (fp64 keeps its precision).
void convert_values(const void *in, zrt_dtype_t from, void *out, zrt_dtype_t to, size_t count) {
  if (from == to) {
    std::memcpy(out, in, count * dtype_size(from));
    return;
  }
  auto load = [&](size_t i) -> double {
    switch (from) {
      case ZRT_DTYPE_FP32:
        return static_cast<const float *>(in)[i];
      case ZRT_DTYPE_FP64:
        return static_cast<const double *>(in)[i];
      case ZRT_DTYPE_BF16:
        return bf16_to_float(static_cast<const uint16_t *>(in)[i]);
      case ZRT_DTYPE_FP16:
        return fp16_to_float(static_cast<const uint16_t *>(in)[i]);
      default:
        return 0;
    }
  };
  for (size_t i = 0; i < count; ++i) {
    double v = load(i);
    switch (to) {
      case ZRT_DTYPE_FP32:
        static_cast<float *>(out)[i] = static_cast<float>(v);
        break;
      case ZRT_DTYPE_FP64:
        static_cast<double *>(out)[i] = v;
        break;
      case ZRT_DTYPE_BF16:
        static_cast<uint16_t *>(out)[i] = float_to_bf16(static_cast<float>(v));
        break;
      case ZRT_DTYPE_FP16:
        static_cast<uint16_t *>(out)[i] = float_to_fp16(static_cast<float>(v));
        break;
      default:
        break;
    }
  }
}

const char *optimizer_name(zrt_optimizer_t o) {
  switch (o) {
    case ZRT_OPTIMIZER_ADAMW:
      return "adamw";
    case ZRT_OPTIMIZER_ADAM:
      return "adam";
    case ZRT_OPTIMIZER_SGD:
      return "sgd";
    case ZRT_OPTIMIZER_LAMB:
      return "lamb";
    default:
      break;
  }
  fail(ZRT_ERR_INVALID_ARGUMENT,
       "params->optimizer is {}: accepted values are ZRT_OPTIMIZER_ADAMW, ZRT_OPTIMIZER_ADAM, "
       "ZRT_OPTIMIZER_SGD, ZRT_OPTIMIZER_LAMB",
       static_cast<int>(o));
}

std::string real(double v) {
  return fmt::format("{:.17g}", v);
}

}  // namespace

EngineSettings EngineSettings::resolve(const Context &context, const zrt_engine_params_t *p) {
  std::map<std::string, std::string> set;
  uint64_t mask = p != nullptr ? p->field_mask : 0;
  const uint64_t known = (uint64_t{1} << 22) - 1;
  if (mask & ~known)
    fail(ZRT_ERR_INVALID_ARGUMENT, "params->field_mask has unknown bits 0x{:x}", mask & ~known);
  auto has = [&](uint64_t bit) { return (mask & bit) != 0; };

  if (has(ZRT_ENGINE_PARAM_FIELD_STAGE)) {
    if (p->stage < 0 || p->stage > 3)
      fail(ZRT_ERR_INVALID_ARGUMENT, "params->stage is {}: accepted values are 0, 1, 2, 3",
           p->stage);
    set["zero_optimization.stage"] = std::to_string(p->stage);
  }
  if (has(ZRT_ENGINE_PARAM_FIELD_COMPUTE_DTYPE)) {
    zrt_dtype_t d = p->compute_dtype;
    if (d != ZRT_DTYPE_FP32 && d != ZRT_DTYPE_BF16 && d != ZRT_DTYPE_FP16)
      fail(ZRT_ERR_NOT_SUPPORTED,
           "params->compute_dtype {} is not supported: accepted values are ZRT_DTYPE_FP32, "
           "ZRT_DTYPE_BF16, ZRT_DTYPE_FP16",
           dtype_name(d));
    set["fp16.enabled"] = d == ZRT_DTYPE_FP16 ? "true" : "false";
    set["bf16.enabled"] = d == ZRT_DTYPE_BF16 ? "true" : "false";
  }
  if (has(ZRT_ENGINE_PARAM_FIELD_OPTIMIZER)) set["optimizer.type"] = optimizer_name(p->optimizer);
  if (has(ZRT_ENGINE_PARAM_FIELD_LR)) set["optimizer.params.lr"] = real(p->lr);
  if (has(ZRT_ENGINE_PARAM_FIELD_BETAS))
    set["optimizer.params.betas"] = real(p->beta1) + "," + real(p->beta2);
  if (has(ZRT_ENGINE_PARAM_FIELD_EPS)) set["optimizer.params.eps"] = real(p->eps);
  if (has(ZRT_ENGINE_PARAM_FIELD_WEIGHT_DECAY))
    set["optimizer.params.weight_decay"] = real(p->weight_decay);
  if (has(ZRT_ENGINE_PARAM_FIELD_MOMENTUM)) set["optimizer.params.momentum"] = real(p->momentum);
  if (has(ZRT_ENGINE_PARAM_FIELD_NESTEROV))
    set["optimizer.params.nesterov"] = p->nesterov ? "true" : "false";
  if (has(ZRT_ENGINE_PARAM_FIELD_OVERLAP))
    set["zero_optimization.overlap_comm"] = p->overlap ? "true" : "false";
  if (has(ZRT_ENGINE_PARAM_FIELD_OFFLOAD_OPTIMIZER))
    set["zero_optimization.offload_optimizer.device"] = p->offload_optimizer ? "cpu" : "none";
  if (has(ZRT_ENGINE_PARAM_FIELD_GRADIENT_CLIPPING))
    set["gradient_clipping"] = real(p->gradient_clipping);
  if (has(ZRT_ENGINE_PARAM_FIELD_GRADIENT_ACCUMULATION_STEPS))
    set["gradient_accumulation_steps"] = std::to_string(p->gradient_accumulation_steps);
  if (has(ZRT_ENGINE_PARAM_FIELD_DETERMINISTIC))
    set["zero.deterministic"] = p->deterministic ? "true" : "false";
  if (has(ZRT_ENGINE_PARAM_FIELD_LOSS_SCALE)) set["fp16.loss_scale"] = real(p->loss_scale);
  if (has(ZRT_ENGINE_PARAM_FIELD_INITIAL_SCALE_POWER))
    set["fp16.initial_scale_power"] = std::to_string(p->initial_scale_power);
  if (has(ZRT_ENGINE_PARAM_FIELD_LOSS_SCALE_WINDOW))
    set["fp16.loss_scale_window"] = std::to_string(p->loss_scale_window);
  if (has(ZRT_ENGINE_PARAM_FIELD_HYSTERESIS))
    set["fp16.hysteresis"] = std::to_string(p->hysteresis);
  if (has(ZRT_ENGINE_PARAM_FIELD_MIN_LOSS_SCALE))
    set["fp16.min_loss_scale"] = real(p->min_loss_scale);
  // Bucket sizes are bytes in the params struct and elements in the file (DeepSpeed's unit);
  // they are converted once the compute dtype is known.

  Config c = context.config().with_params(set);
  EngineSettings s;
  bool fp16 = c.get_bool("fp16.enabled"), bf16 = c.get_bool("bf16.enabled");
  if (fp16 && bf16)
    fail(ZRT_ERR_CONFIG, "fp16.enabled and bf16.enabled are both true: choose one compute dtype");
  s.dtype = fp16 ? ZRT_DTYPE_FP16 : bf16 ? ZRT_DTYPE_BF16 : ZRT_DTYPE_FP32;
  const size_t es = dtype_size(s.dtype);
  s.stage = static_cast<int>(c.get_int("zero_optimization.stage"));
  s.reduce_bucket_bytes =
      static_cast<size_t>(c.get_int("zero_optimization.reduce_bucket_size")) * es;
  s.allgather_bucket_bytes =
      static_cast<size_t>(c.get_int("zero_optimization.allgather_bucket_size")) * es;
  if (has(ZRT_ENGINE_PARAM_FIELD_REDUCE_BUCKET_BYTES)) {
    if (p->reduce_bucket_bytes < es)
      fail(ZRT_ERR_INVALID_ARGUMENT, "params->reduce_bucket_bytes is {}: it must hold one element",
           p->reduce_bucket_bytes);
    if (c.source("zero_optimization.reduce_bucket_size") != ConfigSource::Environment)
      s.reduce_bucket_bytes = p->reduce_bucket_bytes;
  }
  if (has(ZRT_ENGINE_PARAM_FIELD_ALLGATHER_BUCKET_BYTES)) {
    if (p->allgather_bucket_bytes < es)
      fail(ZRT_ERR_INVALID_ARGUMENT,
           "params->allgather_bucket_bytes is {}: it must hold one element",
           p->allgather_bucket_bytes);
    if (c.source("zero_optimization.allgather_bucket_size") != ConfigSource::Environment)
      s.allgather_bucket_bytes = p->allgather_bucket_bytes;
  }
  const std::string &opt = c.get_string("optimizer.type");
  s.optimizer = opt == "adam"   ? ZRT_OPTIMIZER_ADAM
                : opt == "sgd"  ? ZRT_OPTIMIZER_SGD
                : opt == "lamb" ? ZRT_OPTIMIZER_LAMB
                                : ZRT_OPTIMIZER_ADAMW;
  s.lr = c.get_double("optimizer.params.lr");
  const std::vector<double> &betas = c.get_doubles("optimizer.params.betas");
  s.beta1 = betas[0];
  s.beta2 = betas[1];
  s.eps = c.get_double("optimizer.params.eps");
  s.weight_decay = c.get_double("optimizer.params.weight_decay");
  s.momentum = c.get_double("optimizer.params.momentum");
  s.nesterov = c.get_bool("optimizer.params.nesterov");
  s.overlap = c.get_bool("zero_optimization.overlap_comm");
  s.offload_optimizer = c.get_string("zero_optimization.offload_optimizer.device") == "cpu";
  s.gradient_clipping = c.get_double("gradient_clipping");
  s.accumulation_steps = static_cast<int>(c.get_int("gradient_accumulation_steps"));
  s.deterministic = c.get_bool("zero.deterministic");
  s.max_live_elements =
      static_cast<size_t>(c.get_int("zero_optimization.stage3_max_live_parameters"));

  double loss_scale = c.get_double("fp16.loss_scale");
  s.scaler.dynamic = s.dtype == ZRT_DTYPE_FP16 && loss_scale == 0;
  s.scaler.static_scale = loss_scale == 0 ? 1 : loss_scale;
  s.scaler.initial_scale_power = static_cast<int>(c.get_int("fp16.initial_scale_power"));
  s.scaler.window = c.get_int("fp16.loss_scale_window");
  s.scaler.hysteresis = static_cast<int>(c.get_int("fp16.hysteresis"));
  s.scaler.min_scale = c.get_double("fp16.min_loss_scale");

  // Values whose range the schema cannot express.
  auto check = [](bool ok, const char *key, double value, const char *accepted) {
    if (!ok)
      fail(ZRT_ERR_CONFIG, "bad value {} for {}: accepted values are {}", value, key, accepted);
  };
  check(s.lr >= 0, "optimizer.params.lr", s.lr, "lr >= 0");
  check(s.beta1 >= 0 && s.beta1 < 1, "optimizer.params.betas[0]", s.beta1, "0 <= beta1 < 1");
  check(s.beta2 >= 0 && s.beta2 < 1, "optimizer.params.betas[1]", s.beta2, "0 <= beta2 < 1");
  check(s.eps > 0, "optimizer.params.eps", s.eps, "eps > 0");
  check(s.weight_decay >= 0, "optimizer.params.weight_decay", s.weight_decay, "weight_decay >= 0");
  check(s.momentum >= 0 && s.momentum < 1, "optimizer.params.momentum", s.momentum,
        "0 <= momentum < 1");
  check(s.gradient_clipping >= 0, "gradient_clipping", s.gradient_clipping,
        "0 (off) or a positive norm");
  check(loss_scale >= 0, "fp16.loss_scale", loss_scale, "0 (dynamic) or a positive scale");
  check(s.scaler.min_scale > 0, "fp16.min_loss_scale", s.scaler.min_scale, "a positive scale");
  if (s.offload_optimizer && s.stage == 0)
    fail(ZRT_ERR_NOT_SUPPORTED,
         "optimizer offload needs stage 1, 2 or 3 (ZeRO-Offload shards the optimizer state); "
         "the engine is configured for stage 0");
  if (s.nesterov && s.momentum == 0)
    fail(ZRT_ERR_CONFIG, "optimizer.params.nesterov needs a momentum > 0");
  return s;
}

Engine::Engine(Context &context, const EngineSettings &settings)
    : context_(context), settings_(settings), lr_(settings.lr) {
  EnginePart &part = context.part<EnginePart>();
  kernels_ = &part.kernels();
  threads_ = &part.threads();
  Communicator::Options options;
  options.backend = context.config().get_string("comm.backend");
  options.deterministic = settings.deterministic;
  comm_ = std::make_unique<Communicator>(context, context.comm(), options, false);
  check_mpi(MPI_Comm_dup(context.comm(), &control_), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(control_, MPI_ERRORS_RETURN);
  rank_ = comm_->rank();
  nranks_ = comm_->size();
  scaler_ = LossScaler(settings.scaler);
  log::debug("engine: stage {}, {}, {} kernels, {} optimizer thread(s)", settings.stage,
             dtype_name(settings.dtype), kernels_->isa, threads_->size());
}

Engine::~Engine() {
  // Collectives still in flight read and write our buffers: finish them first.
  try {
    finish_prefetch();
    drain();
  } catch (...) {
    // An error here was already reported to the caller of the failed operation.
  }
  in_flight_.clear();
  prefetch_.clear();
  comm_.reset();
  if (control_ != MPI_COMM_NULL) MPI_Comm_free(&control_);
}

size_t Engine::esize() const {
  return dtype_size(settings_.dtype);
}

const ParamInfo &Engine::param(int index) const {
  require_index(index);
  return params_info_[static_cast<size_t>(index)];
}

void Engine::require_committed(const char *what) const {
  if (!committed_)
    fail(ZRT_ERR_INVALID_STATE, "{} needs a committed engine: call zrt_engine_commit first", what);
}

void Engine::require_index(int index) const {
  if (index < 0 || index >= param_count())
    fail(ZRT_ERR_INTERNAL, "parameter index {} out of range", index);
}

int Engine::register_param(const char *name, zrt_dtype_t dtype, int ndim, const int64_t *shape) {
  require_nonnull(name, "name");
  if (committed_)
    fail(ZRT_ERR_INVALID_STATE,
         "cannot register '{}': the engine is committed; register every parameter before "
         "zrt_engine_commit",
         name);
  if (*name == '\0') fail(ZRT_ERR_INVALID_ARGUMENT, "name is empty");
  if (names_.count(name))
    fail(ZRT_ERR_INVALID_ARGUMENT, "a parameter named '{}' is already registered", name);
  dtype_size(dtype);  // a valid dtype at all
  if (dtype != settings_.dtype)
    fail(ZRT_ERR_NOT_SUPPORTED, "parameter '{}' has dtype {} but the engine computes in {}", name,
         dtype_name(dtype), dtype_name(settings_.dtype));
  if (ndim < 1 || ndim > 8)
    fail(ZRT_ERR_INVALID_ARGUMENT, "parameter '{}': ndim is {}: accepted values are 1 .. 8", name,
         ndim);
  require_nonnull(shape, "shape");
  ParamInfo info;
  info.name = name;
  info.numel = 1;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] <= 0)
      fail(ZRT_ERR_INVALID_ARGUMENT, "parameter '{}': shape[{}] is {}: extents must be positive",
           name, d, shape[d]);
    if (info.numel > (size_t{1} << 48) / static_cast<size_t>(shape[d]))
      fail(ZRT_ERR_INVALID_ARGUMENT, "parameter '{}' is too large", name);
    info.numel *= static_cast<size_t>(shape[d]);
    info.shape.push_back(shape[d]);
  }
  names_[info.name] = param_count();
  params_info_.push_back(std::move(info));
  return param_count() - 1;
}

void Engine::commit() {
  run_agreed(control_, [&] {
    if (committed_) fail(ZRT_ERR_INVALID_STATE, "the engine is already committed");
  });
  // Every rank must have registered the same tensors; compare hashes, then name the first
  // parameter that differs from rank 0's.
  std::vector<uint64_t> hashes;
  for (const ParamInfo &p : params_info_) {
    XXH3_state_t *st = XXH3_createState();
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, p.name.data(), p.name.size());
    XXH3_64bits_update(st, p.shape.data(), p.shape.size() * sizeof(int64_t));
    hashes.push_back(XXH3_64bits_digest(st));
    XXH3_freeState(st);
  }
  uint64_t count = hashes.size(), rank0_count = count;
  check_mpi(MPI_Bcast(&rank0_count, 1, MPI_UINT64_T, 0, control_), "MPI_Bcast");
  std::vector<uint64_t> rank0(rank0_count);
  if (rank_ == 0) rank0 = hashes;
  check_mpi(MPI_Bcast(rank0.data(), static_cast<int>(rank0_count), MPI_UINT64_T, 0, control_),
            "MPI_Bcast");
  run_agreed(control_, [&] {
    if (count == 0) fail(ZRT_ERR_INVALID_STATE, "no parameter is registered");
    for (size_t i = 0; i < std::min(count, rank0_count); ++i)
      if (hashes[i] != rank0[i])
        fail(ZRT_ERR_MISMATCH,
             "parameter #{} ('{}') differs from rank 0's parameter #{}: every rank must register "
             "the same names and shapes in the same order",
             i, params_info_[i].name, i);
    if (count != rank0_count)
      fail(ZRT_ERR_MISMATCH, "{} parameters are registered here but {} on rank 0", count,
           rank0_count);
  });

  const size_t es = esize();
  layout_ = Layout(params_info_, std::max<size_t>(settings_.reduce_bucket_bytes / es, 1), nranks_);
  params_info_ = layout_.params();
  const auto &buckets = layout_.buckets();
  const size_t total = layout_.total(), shard = layout_.shard();
  const size_t state = settings_.stage == 0 ? total : shard;

  run_agreed(control_, [&] {
    // Long-lived state packs at one end of the context's host pool, buckets and landing
    // buffers at the other.
    host_ = &context_.part<MemoryPart>().pool(MemorySpace::Host);
    const Lifetime kLong = Lifetime::Long;
    params_ = HostBuffer(*host_, (settings_.stage == 3 ? shard : total) * es, kLong);
    if (mixed()) master_ = HostBuffer(*host_, state * sizeof(float), kLong);
    bool two_moments = settings_.optimizer != ZRT_OPTIMIZER_SGD;
    if (two_moments || settings_.momentum > 0)
      m_ = HostBuffer(*host_, state * sizeof(float), kLong);
    if (two_moments) v_ = HostBuffer(*host_, state * sizeof(float), kLong);
    grads_ = HostBuffer(*host_, (settings_.stage <= 1 ? total : shard) * es, kLong);
    // Gradient buffers: two for buckets of whole parameters (backward writes one while the
    // other is reduced), as large as the two largest such buckets, and one for the largest
    // parameter cut into several buckets, whose gradient backward writes as one tensor.
    // Buffers go to the smallest free one that fits (group_buffer), so a small bucket does
    // not need a buffer of the largest's size.
    if (settings_.stage >= 2) {
      std::vector<size_t> sizes;
      for (const BucketInfo &b : buckets)
        if (b.group_buckets == 1) sizes.push_back(b.length);
      std::sort(sizes.begin(), sizes.end(), std::greater<>());
      sizes.resize(std::min<size_t>(sizes.size(), 2));
      if (layout_.max_split_group() > 0) sizes.push_back(layout_.max_split_group());
      for (size_t n : sizes) {
        bucket_buffers_.emplace_back(*host_, n * es, Lifetime::Transient);
        free_buffers_.push_back(static_cast<int>(bucket_buffers_.size()) - 1);
      }
    }
    if (settings_.stage == 1 || (settings_.stage >= 2 && settings_.accumulation_steps > 1))
      for (int i = 0; i < 2; ++i) {
        scratch_.emplace_back(*host_, layout_.max_bucket() / static_cast<size_t>(nranks_) * es,
                              Lifetime::Transient);
        free_scratch_.push_back(i);
      }
  });
  bucket_buffer_of_.assign(buckets.size(), -1);
  ready_.assign(params_info_.size(), 0);
  bucket_ready_.assign(buckets.size(), 0);
  gathered_.resize(buckets.size());
  gathered_refs_.assign(buckets.size(), 0);
  gathered_used_.assign(buckets.size(), 0);
  param_gathered_.assign(params_info_.size(), 0);

  for (const BucketInfo &b : buckets) {
    if (settings_.stage == 0) {
      for (int r = 0; r < nranks_; ++r) {
        size_t flat = layout_.slice_begin(b, r);
        owned_.push_back({b.index, r, flat, flat, b.slice});
      }
    } else {
      owned_.push_back({b.index, rank_, layout_.slice_begin(b, rank_), b.shard_offset, b.slice});
    }
  }
  committed_ = true;
  log::debug("engine committed: {} parameters, {} elements ({} padded) in {} buckets",
             param_count(), layout_.unpadded(), total, buckets.size());
}

RequestPtr Engine::post(CollArgs args) {
  return RequestPtr(comm_->post(args).release(), RequestRelease{comm_.get()});
}

void Engine::set_lr(double lr) {
  if (!(lr >= 0) || !std::isfinite(lr))
    fail(ZRT_ERR_INVALID_ARGUMENT, "lr is {}: it must be a finite value >= 0", lr);
  lr_ = lr;
}

// --- parameters ------------------------------------------------------------------------

void Engine::set_param(int index, const void *values, zrt_dtype_t dtype) {
  require_committed("zrt_param_set");
  require_nonnull(values, "values");
  const ParamInfo &p = param(index);
  if (dtype != ZRT_DTYPE_FP32 && dtype != settings_.dtype)
    fail(ZRT_ERR_INVALID_ARGUMENT, "values of '{}' must be fp32 or the compute dtype {}, not {}",
         p.name, dtype_name(settings_.dtype), dtype_name(dtype));
  const size_t es = esize(), vs = dtype_size(dtype);
  const char *src = static_cast<const char *>(values);

  // The part of the parameter this rank stores: all of it for the full buffers, the
  // intersection with its slice of each of the parameter's buckets for shards.
  auto write = [&](char *dst, zrt_dtype_t dst_dtype, size_t from, size_t n) {
    convert_values(src + from * vs, dtype, dst, dst_dtype, n);
  };
  if (settings_.stage <= 2) {
    write(params_.bytes() + p.offset * es, settings_.dtype, 0, p.numel);
    if (mixed() && settings_.stage == 0)
      write(master_.bytes() + p.offset * 4, ZRT_DTYPE_FP32, 0, p.numel);
  }
  if (settings_.stage == 0 || (settings_.stage <= 2 && !mixed())) return;
  for (int k = p.bucket; k < p.bucket + p.buckets; ++k) {
    const BucketInfo &b = layout_.bucket(k);
    size_t lo = layout_.slice_begin(b, rank_), hi = lo + b.slice;
    size_t from = std::max(p.offset, lo), to = std::min(p.offset + p.numel, hi);
    if (to <= from) continue;
    size_t in_shard = b.shard_offset + (from - lo);
    if (settings_.stage == 3)
      write(params_.bytes() + in_shard * es, settings_.dtype, from - p.offset, to - from);
    if (mixed()) write(master_.bytes() + in_shard * 4, ZRT_DTYPE_FP32, from - p.offset, to - from);
  }
}

void Engine::get_param(int index, void *values, zrt_dtype_t dtype) {
  run_agreed(control_, [&] {
    require_committed("zrt_param_get");
    require_nonnull(values, "values");
    dtype_size(dtype);
  });
  const ParamInfo &p = param(index);
  if (settings_.stage == 0) {
    const char *src = mixed() ? master_.bytes() + p.offset * 4 : params_.bytes() + p.offset * 4;
    convert_values(src, ZRT_DTYPE_FP32, values, dtype, p.numel);
    return;
  }
  // Gather the fp32 master slices of the parameter's buckets (its group, contiguous).
  const BucketInfo &g = layout_.bucket(p.bucket);
  std::vector<float> whole(g.group_length);
  for (int k = p.bucket; k < p.bucket + p.buckets; ++k) {
    const BucketInfo &b = layout_.bucket(k);
    const char *mine = mixed()                ? master_.bytes() + b.shard_offset * 4
                       : settings_.stage == 3 ? params_.bytes() + b.shard_offset * 4
                                              : params_.bytes() + layout_.slice_begin(b, rank_) * 4;
    CollArgs a;
    a.kind = CollKind::AllGather;
    a.send = mine;
    a.recv = whole.data() + (b.offset - g.group_offset);
    a.count = b.length;
    a.dtype = ZRT_DTYPE_FP32;
    RequestPtr r = post(a);
    r->wait();
  }
  convert_values(whole.data() + (p.offset - g.group_offset), ZRT_DTYPE_FP32, values, dtype,
                 p.numel);
}

void *Engine::param_data(int index) {
  require_committed("zrt_param_data");
  const ParamInfo &p = param(index);
  if (settings_.stage <= 2) return params_.bytes() + p.offset * esize();
  if (!param_gathered_[static_cast<size_t>(index)])
    fail(ZRT_ERR_INVALID_STATE,
         "parameter '{}' is not gathered: at stage 3 call zrt_param_gather before using it",
         p.name);
  const BucketInfo &b = layout_.bucket(p.bucket);
  return gathered_[static_cast<size_t>(b.group)].bytes() + (p.offset - b.group_offset) * esize();
}

// --- gradients ---------------------------------------------------------------------------

void *Engine::grad_data(int index) {
  require_committed("zrt_grad_data");
  const ParamInfo &p = param(index);
  if (ready_[static_cast<size_t>(index)])
    fail(ZRT_ERR_INVALID_STATE,
         "the gradient of '{}' was already made ready in this micro-step; ask for its buffer "
         "before zrt_grad_ready",
         p.name);
  if (settings_.stage <= 1) return grads_.bytes() + p.offset * esize();
  const BucketInfo &b = layout_.bucket(p.bucket);
  return group_buffer(p.bucket) + (p.offset - b.group_offset) * esize();
}

char *Engine::group_buffer(int bucket) {
  const BucketInfo &b = layout_.bucket(bucket);
  int &slot = bucket_buffer_of_[static_cast<size_t>(b.group)];
  if (slot < 0) {
    const size_t bytes = b.group_length * esize();
    // The smallest free buffer that holds the group, so that a split parameter's large
    // buffer is left for it.
    auto fit = free_buffers_.end();
    while (true) {
      fit = free_buffers_.end();
      for (auto it = free_buffers_.begin(); it != free_buffers_.end(); ++it)
        if (bucket_buffers_[static_cast<size_t>(*it)].size() >= bytes &&
            (fit == free_buffers_.end() || bucket_buffers_[static_cast<size_t>(*it)].size() <
                                               bucket_buffers_[static_cast<size_t>(*fit)].size()))
          fit = it;
      if (fit != free_buffers_.end()) break;
      if (!in_flight_.empty()) {
        complete_oldest();
      } else {
        // Backward is writing more buckets than there are buffers before any is complete
        // (gradients out of bucket order): grow rather than stall.
        bucket_buffers_.emplace_back(*host_, std::max(bytes, layout_.max_single_group() * esize()),
                                     Lifetime::Transient);
        free_buffers_.push_back(static_cast<int>(bucket_buffers_.size()) - 1);
        log::debug("engine: gradient bucket buffer #{} added", bucket_buffers_.size());
      }
    }
    slot = *fit;
    free_buffers_.erase(fit);
    std::memset(bucket_buffers_[static_cast<size_t>(slot)].bytes(), 0, bytes);
  }
  return bucket_buffers_[static_cast<size_t>(slot)].bytes();
}

int Engine::acquire_scratch() {
  while (free_scratch_.empty()) {
    if (!in_flight_.empty()) {
      complete_oldest();
    } else {
      scratch_.emplace_back(*host_, layout_.max_bucket() / static_cast<size_t>(nranks_) * esize(),
                            Lifetime::Transient);
      free_scratch_.push_back(static_cast<int>(scratch_.size()) - 1);
    }
  }
  int s = free_scratch_.back();
  free_scratch_.pop_back();
  return s;
}

void Engine::grad_ready(int index) {
  require_committed("zrt_grad_ready");
  const ParamInfo &p = param(index);
  char &ready = ready_[static_cast<size_t>(index)];
  if (ready)
    fail(ZRT_ERR_INVALID_STATE, "zrt_grad_ready was called twice for '{}' in one micro-step",
         p.name);
  ready = 1;
  for (int k = p.bucket; k < p.bucket + p.buckets; ++k)
    ++bucket_ready_[static_cast<size_t>(k)];
  // Stages 0 and 1 accumulate in the full buffer and reduce once, on the last micro-step.
  if (settings_.stage <= 1 && !last_micro_step()) return;
  try_post();
}

void Engine::try_post() {
  const auto &buckets = layout_.buckets();
  while (next_post_ < static_cast<int>(buckets.size())) {
    const BucketInfo &b = buckets[static_cast<size_t>(next_post_)];
    if (bucket_ready_[static_cast<size_t>(next_post_)] != b.last_param - b.first_param + 1) break;
    post_bucket(next_post_++);
  }
}

void Engine::post_bucket(int bucket) {
  const BucketInfo &b = layout_.buckets()[static_cast<size_t>(bucket)];
  const size_t es = esize();
  CollArgs a;
  a.dtype = settings_.dtype;
  a.op = ZRT_OP_AVG;
  a.count = b.length;
  Pending pending{bucket, nullptr, -1};
  if (settings_.stage == 0) {
    a.kind = CollKind::AllReduce;
    a.send = a.recv = grads_.bytes() + b.offset * es;
  } else if (settings_.stage == 1) {
    a.kind = CollKind::ReduceScatter;
    pending.scratch = acquire_scratch();
    a.send = grads_.bytes() + b.offset * es;
    a.recv = scratch_[static_cast<size_t>(pending.scratch)].bytes();
  } else {
    a.kind = CollKind::ReduceScatter;
    a.send = group_buffer(bucket) + (b.offset - b.group_offset) * es;
    if (micro_ == 0) {
      a.recv = grads_.bytes() + b.shard_offset * es;  // the first micro-step writes directly
    } else {
      pending.scratch = acquire_scratch();
      a.recv = scratch_[static_cast<size_t>(pending.scratch)].bytes();
    }
  }
  pending.request = post(a);
  in_flight_.push_back(std::move(pending));
  // Without overlap every reduction completes before backward continues.
  if (!settings_.overlap) drain();
}

void Engine::complete_oldest() {
  Pending p = std::move(in_flight_.front());
  in_flight_.pop_front();
  p.request->wait();
  const BucketInfo &b = layout_.buckets()[static_cast<size_t>(p.bucket)];
  const size_t es = esize();
  if (settings_.stage == 1) {
    std::memcpy(grads_.bytes() + layout_.slice_begin(b, rank_) * es,
                scratch_[static_cast<size_t>(p.scratch)].bytes(), b.slice * es);
  } else if (settings_.stage >= 2) {
    if (p.scratch >= 0)
      accumulate(grads_.bytes() + b.shard_offset * es,
                 scratch_[static_cast<size_t>(p.scratch)].bytes(), b.slice, settings_.dtype);
    // Buckets complete in order: the group's last one frees its buffer.
    if (b.index == b.group + b.group_buckets - 1) {
      int &slot = bucket_buffer_of_[static_cast<size_t>(b.group)];
      free_buffers_.push_back(slot);
      slot = -1;
    }
  }
  if (p.scratch >= 0) free_scratch_.push_back(p.scratch);
}

void Engine::drain() {
  while (!in_flight_.empty())
    complete_oldest();
}

// --- the step ----------------------------------------------------------------------------

void Engine::validate_ready() {
  // Post what is ready first: another rank may be waiting for those reductions, and the
  // agreement below blocks.
  const bool reduce_now = settings_.stage >= 2 || last_micro_step();
  if (committed_ && reduce_now) try_post();
  try {
    // Agreed: a rank that is not ready must not leave the others waiting in the reductions.
    // Our posted reductions keep progressing meanwhile: other ranks may be waiting on them.
    run_agreed(
        control_,
        [&] {
          require_committed("zrt_engine_step");
          for (int i = 0; i < param_count(); ++i)
            if (!ready_[static_cast<size_t>(i)])
              fail(ZRT_ERR_INVALID_STATE,
                   "the gradient of '{}' was not made ready (zrt_grad_ready) before "
                   "zrt_engine_step",
                   params_info_[static_cast<size_t>(i)].name);
        },
        [this] { comm_->progress(); });
  } catch (const Error &) {
    // Keep the ranks in step and the engine usable: reduce what is left as it stands, drop
    // this micro-step's gradients, and report the error everywhere.
    if (committed_) {
      if (reduce_now) {
        for (int i = 0; i < param_count(); ++i)
          if (!ready_[static_cast<size_t>(i)]) {
            ready_[static_cast<size_t>(i)] = 1;
            const ParamInfo &p = params_info_[static_cast<size_t>(i)];
            for (int k = p.bucket; k < p.bucket + p.buckets; ++k)
              ++bucket_ready_[static_cast<size_t>(k)];
          }
        try_post();
        drain();
      }
      grads_.zero();
      micro_ = 0;
      reset_micro_step();
    }
    throw;
  }
}

void Engine::reset_micro_step() {
  std::fill(ready_.begin(), ready_.end(), 0);
  std::fill(bucket_ready_.begin(), bucket_ready_.end(), 0);
  next_post_ = 0;
}

OptimRange Engine::optim_range(const OwnedRange &o) const {
  const size_t es = esize();
  OptimRange r;
  r.count = o.count;
  if (mixed()) {
    r.weights = master_.data<float>() + o.state;
    r.copy = params_.bytes() + (settings_.stage == 3 ? o.state : o.flat) * es;
    r.copy_dtype = settings_.dtype;
  } else {
    r.weights = params_.data<float>() + (settings_.stage == 3 ? o.state : o.flat);
  }
  r.m = m_.empty() ? nullptr : m_.data<float>() + o.state;
  r.v = v_.empty() ? nullptr : v_.data<float>() + o.state;
  r.grads = grads_.bytes() + (settings_.stage <= 1 ? o.flat : o.state) * es;
  r.grad_dtype = settings_.dtype;
  return r;
}

bool Engine::overflow() {
  int local = 0;
  for (const OwnedRange &o : owned_) {
    OptimRange r = optim_range(o);
    if (kernels_->non_finite(r.grads, r.grad_dtype, r.count)) {
      local = 1;
      break;
    }
  }
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &local, 1, MPI_INT, MPI_MAX, control_),
            "MPI_Allreduce(overflow)");
  return local != 0;
}

std::vector<double> Engine::gather_partials(const std::vector<double> &mine, size_t per_rank) {
  std::vector<double> all(per_rank * static_cast<size_t>(nranks_));
  check_mpi(MPI_Allgather(mine.data(), static_cast<int>(per_rank), MPI_DOUBLE, all.data(),
                          static_cast<int>(per_rank), MPI_DOUBLE, control_),
            "MPI_Allgather(partial sums)");
  return all;
}

double Engine::grad_norm_squared() {
  // One partial per (bucket, slice owner), each a sum over fixed blocks; summed bucket by
  // bucket in rank order. Stage 0 computes every partial, the others theirs and gather.
  const size_t nb = layout_.buckets().size(), n = static_cast<size_t>(nranks_);
  std::vector<double> partial(nb * n, 0.0);
  for (const OwnedRange &o : owned_) {
    OptimRange r = optim_range(o);
    const size_t blocks = (r.count + kNormBlock - 1) / kNormBlock;
    std::vector<double> block_sums(blocks, 0.0);
    threads_->parallel_for(blocks, 1, [&](size_t begin, size_t end) {
      for (size_t k = begin; k < end; ++k) {
        size_t first = k * kNormBlock, count = std::min(kNormBlock, r.count - first);
        block_sums[k] = kernels_->sum_squares(static_cast<const char *>(r.grads) + first * esize(),
                                              r.grad_dtype, count);
      }
    });
    double sum = 0;
    for (double s : block_sums)
      sum += s;
    partial[static_cast<size_t>(o.bucket) * n + static_cast<size_t>(o.owner)] = sum;
  }
  if (settings_.stage > 0) {
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

OptimRange Engine::sub_range(const OptimRange &r, size_t begin, size_t count) const {
  OptimRange sub = r;
  sub.weights += begin;
  if (sub.m) sub.m += begin;
  if (sub.v) sub.v += begin;
  sub.grads = static_cast<const char *>(r.grads) + begin * esize();
  if (sub.copy) sub.copy = static_cast<char *>(r.copy) + begin * dtype_size(r.copy_dtype);
  sub.count = count;
  return sub;
}

std::vector<Engine::Piece> Engine::param_pieces() const {
  std::vector<Piece> pieces;
  for (const OwnedRange &o : owned_) {
    OptimRange r = optim_range(o);
    const BucketInfo &b = layout_.buckets()[static_cast<size_t>(o.bucket)];
    for (int p = b.first_param; p <= b.last_param; ++p) {
      const ParamInfo &info = params_info_[static_cast<size_t>(p)];
      size_t from = std::max(info.offset, o.flat),
             to = std::min(info.offset + info.numel, o.flat + o.count);
      if (from < to)
        pieces.push_back({p, o.owner, from - info.offset, sub_range(r, from - o.flat, to - from)});
    }
  }
  return pieces;
}

double Engine::weight_decay_of(int param) const {
  double wd = params_info_[static_cast<size_t>(param)].weight_decay;
  return wd >= 0 ? wd : settings_.weight_decay;
}

void Engine::for_each_range(const std::function<void(int, const OptimRange &)> &kernel) {
  constexpr size_t kGrain = 4096;
  if (!custom_decay_) {
    // One weight decay for everything: whole owned ranges, padding included (zeros stay 0).
    for (const OwnedRange &o : owned_) {
      OptimRange r = optim_range(o);
      threads_->parallel_for(r.count, kGrain, [&](size_t begin, size_t end) {
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
    threads_->parallel_for(p.range.count, kGrain, [&](size_t begin, size_t end) {
      kernel(p.param, sub_range(p.range, begin, end - begin));
    });
  }
  threads_->parallel_for(small.size(), 1, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      kernel(small[i].param, small[i].range);
  });
}

void Engine::run_optimizer(float grad_scale) {
  const double t = static_cast<double>(step_ + 1);
  if (settings_.optimizer == ZRT_OPTIMIZER_SGD) {
    SgdStep base;
    base.lr = static_cast<float>(lr_);
    base.momentum = static_cast<float>(settings_.momentum);
    base.nesterov = settings_.nesterov;
    base.grad_scale = grad_scale;
    for_each_range([&](int param, const OptimRange &r) {
      SgdStep s = base;
      s.weight_decay =
          static_cast<float>(param < 0 ? settings_.weight_decay : weight_decay_of(param));
      kernels_->sgd(s, r);
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
  base.step_size = static_cast<float>(-lr_ / bc1);
  base.inv_bc1 = static_cast<float>(1 / bc1);
  base.inv_sqrt_bc2 = static_cast<float>(1 / std::sqrt(bc2));
  base.grad_scale = grad_scale;
  if (settings_.optimizer == ZRT_OPTIMIZER_LAMB) {
    run_lamb(base);
    return;
  }
  for_each_range([&](int param, const OptimRange &r) {
    AdamStep s = base;
    double wd = param < 0 ? settings_.weight_decay : weight_decay_of(param);
    if (settings_.optimizer == ZRT_OPTIMIZER_ADAMW) s.decay = static_cast<float>(-lr_ * wd);
    if (settings_.optimizer == ZRT_OPTIMIZER_ADAM) s.l2 = static_cast<float>(wd);
    kernels_->adam(s, r);
  });
}

void Engine::run_lamb(const AdamStep &base) {
  // A parameter's trust ratio needs its norms over all its pieces on all ranks, summed in
  // rank order.
  std::vector<Piece> pieces = param_pieces();
  const size_t np = params_info_.size(), n = static_cast<size_t>(nranks_);
  std::vector<double> sums(2 * np * n, 0.0);  // [owner][param][w, u]
  std::vector<std::pair<double, double>> piece_sums(pieces.size());
  auto step_for = [&](int param) {
    AdamStep s = base;
    s.weight_decay = static_cast<float>(weight_decay_of(param));
    return s;
  };
  threads_->parallel_for(pieces.size(), 1, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      kernels_->lamb_moments(step_for(pieces[i].param), pieces[i].range, &piece_sums[i].first,
                             &piece_sums[i].second);
  });
  for (size_t i = 0; i < pieces.size(); ++i) {
    size_t at =
        (static_cast<size_t>(pieces[i].owner) * np + static_cast<size_t>(pieces[i].param)) * 2;
    sums[at] = piece_sums[i].first;
    sums[at + 1] = piece_sums[i].second;
  }
  if (settings_.stage > 0) {
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
    lr_trust[p] = static_cast<float>(lr_ * trust);
  }
  threads_->parallel_for(pieces.size(), 1, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      kernels_->lamb_apply(step_for(pieces[i].param), pieces[i].range,
                           lr_trust[static_cast<size_t>(pieces[i].param)]);
  });
}

void Engine::set_weight_decay(int index, double weight_decay) {
  const ParamInfo &p = param(index);
  if (!(weight_decay >= 0) || !std::isfinite(weight_decay))
    fail(ZRT_ERR_INVALID_ARGUMENT, "weight decay of '{}' is {}: it must be a finite value >= 0",
         p.name, weight_decay);
  params_info_[static_cast<size_t>(index)].weight_decay = weight_decay;
  custom_decay_ = true;
}

void Engine::gather_updated_params() {
  const size_t es = esize();
  size_t bytes_in_flight = 0;
  std::deque<std::pair<RequestPtr, size_t>> window;
  for (const BucketInfo &b : layout_.buckets()) {
    while (!window.empty() && bytes_in_flight + b.length * es > settings_.allgather_bucket_bytes) {
      window.front().first->wait();
      bytes_in_flight -= window.front().second;
      window.pop_front();
    }
    CollArgs a;
    a.kind = CollKind::AllGather;
    a.recv = params_.bytes() + b.offset * es;
    a.send = params_.bytes() + layout_.slice_begin(b, rank_) * es;  // in place
    a.count = b.length;
    a.dtype = settings_.dtype;
    window.emplace_back(post(a), b.length * es);
    bytes_in_flight += b.length * es;
  }
  for (auto &w : window)
    w.first->wait();
}

zrt_step_report_t Engine::step() {
  validate_ready();
  zrt_step_report_t report{};
  if (!last_micro_step()) {
    drain();
    ++micro_;
    reset_micro_step();
    report.step = step_;
    report.loss_scale = scaler_.scale();
    return report;
  }
  drain();
  finish_prefetch();
  if (settings_.stage == 3) drop_gathered();

  const double unscale = 1.0 / (scaler_.scale() * settings_.accumulation_steps);
  if (scaler_.dynamic() && overflow()) {
    scaler_.update(true);
    grads_.zero();
    micro_ = 0;
    reset_micro_step();
    report.skipped = 1;
    report.step = step_;
    report.loss_scale = scaler_.scale();
    report.grad_norm = std::numeric_limits<double>::infinity();
    log::info("step {}: gradient overflow on some rank, step skipped, loss scale now {}", step_,
              scaler_.scale());
    return report;
  }
  const double norm = std::sqrt(grad_norm_squared()) * unscale;
  double clip = 1;
  if (settings_.gradient_clipping > 0 && norm > settings_.gradient_clipping)
    clip = settings_.gradient_clipping / (norm + 1e-6);
  run_optimizer(static_cast<float>(unscale * clip));
  if (settings_.stage == 1 || settings_.stage == 2) gather_updated_params();

  grads_.zero();
  micro_ = 0;
  reset_micro_step();
  ++step_;
  scaler_.update(false);
  report.applied = 1;
  report.step = step_;
  report.loss_scale = scaler_.scale();
  report.grad_norm = norm;
  return report;
}

// --- stage 3 -----------------------------------------------------------------------------

void Engine::fetch(int group, bool wait_now) {
  const BucketInfo &g = layout_.bucket(group);
  const size_t es = esize(), bytes = g.group_length * es;
  HostBuffer &buf = gathered_[static_cast<size_t>(group)];
  // Reuse a spare buffer when one is large enough: the all-gathers overwrite all of it.
  for (auto it = spare_gather_.begin(); it != spare_gather_.end(); ++it)
    if (it->size() >= bytes) {
      buf = std::move(*it);
      spare_gather_.erase(it);
      break;
    }
  if (buf.empty())
    buf = HostBuffer(*host_, std::max(bytes, layout_.max_single_group() * es), Lifetime::Transient,
                     false);
  resident_elements_ += g.group_length;
  gathered_used_[static_cast<size_t>(group)] = ++use_clock_;
  // One all-gather per bucket of the group, each into its place in the group's buffer.
  for (int k = group; k < group + g.group_buckets; ++k) {
    const BucketInfo &b = layout_.bucket(k);
    CollArgs a;
    a.kind = CollKind::AllGather;
    a.send = params_.bytes() + b.shard_offset * es;
    a.recv = buf.bytes() + (b.offset - g.group_offset) * es;
    a.count = b.length;
    a.dtype = settings_.dtype;
    RequestPtr r = post(a);
    if (wait_now)
      r->wait();
    else
      prefetch_.push_back(std::move(r));
  }
  if (!wait_now) prefetch_bucket_ = group;
}

void Engine::finish_prefetch() {
  if (prefetch_.empty()) return;
  std::vector<RequestPtr> requests = std::move(prefetch_);
  prefetch_.clear();
  prefetch_bucket_ = -1;
  for (RequestPtr &r : requests)
    r->wait();
}

void Engine::free_gathered(int group) {
  HostBuffer &buf = gathered_[static_cast<size_t>(group)];
  if (buf.empty()) return;
  resident_elements_ -= layout_.bucket(group).group_length;
  if (spare_gather_.size() < 2)
    spare_gather_.push_back(std::move(buf));
  else
    buf = HostBuffer();
}

void Engine::evict_gathered() {
  while (resident_elements_ > settings_.max_live_elements) {
    int victim = -1;
    for (size_t b = 0; b < gathered_.size(); ++b) {
      if (gathered_[b].empty() || gathered_refs_[b] > 0 || static_cast<int>(b) == prefetch_bucket_)
        continue;
      if (victim < 0 || gathered_used_[b] < gathered_used_[static_cast<size_t>(victim)])
        victim = static_cast<int>(b);
    }
    if (victim < 0) return;  // everything resident is in use
    free_gathered(victim);
  }
}

void Engine::drop_gathered() {
  for (size_t b = 0; b < gathered_.size(); ++b)
    free_gathered(static_cast<int>(b));
  std::fill(gathered_refs_.begin(), gathered_refs_.end(), 0);
  std::fill(param_gathered_.begin(), param_gathered_.end(), 0);
  last_gathered_bucket_ = -1;
}

void Engine::gather(int index) {
  require_committed("zrt_param_gather");
  if (settings_.stage != 3) return;
  const ParamInfo &p = param(index);
  const int b = layout_.bucket(p.bucket).group;
  if (prefetch_bucket_ == b) finish_prefetch();
  if (gathered_[static_cast<size_t>(b)].empty()) fetch(b, true);
  gathered_used_[static_cast<size_t>(b)] = ++use_clock_;
  char &flag = param_gathered_[static_cast<size_t>(index)];
  if (!flag) {
    flag = 1;
    ++gathered_refs_[static_cast<size_t>(b)];
  }
  // Prefetch the next group in the direction the gathers are moving (forward walks from
  // the highest bucket down, backward up). Every rank decides the same way.
  int direction = last_gathered_bucket_ < 0 || b < last_gathered_bucket_ ? -1 : 1;
  if (b == last_gathered_bucket_) direction = 0;
  if (direction != 0) last_gathered_bucket_ = b;
  int next = direction < 0 ? b - 1 : b + layout_.bucket(b).group_buckets;
  if (next >= 0 && next < static_cast<int>(gathered_.size())) next = layout_.bucket(next).group;
  if (direction != 0 && prefetch_.empty() && next >= 0 &&
      next < static_cast<int>(gathered_.size()) && gathered_[static_cast<size_t>(next)].empty())
    fetch(next, false);
  evict_gathered();
}

void Engine::release(int index) {
  require_committed("zrt_param_release");
  if (settings_.stage != 3) return;
  const ParamInfo &p = param(index);
  char &flag = param_gathered_[static_cast<size_t>(index)];
  if (!flag)
    fail(ZRT_ERR_INVALID_STATE, "parameter '{}' is not gathered: nothing to release", p.name);
  flag = 0;
  --gathered_refs_[static_cast<size_t>(layout_.bucket(p.bucket).group)];
  evict_gathered();
}

// --- checkpoints -------------------------------------------------------------------------

std::vector<Engine::StatePiece> Engine::state_pieces() const {
  std::vector<StatePiece> out;
  for (const Piece &p : param_pieces())
    out.push_back(
        {p.param, p.owner, p.param_offset, p.range.count, p.range.weights, p.range.m, p.range.v});
  return out;
}

void Engine::require_between_steps(const char *what) const {
  require_committed(what);
  bool busy = micro_ != 0 || !in_flight_.empty() || !prefetch_.empty() ||
              std::any_of(ready_.begin(), ready_.end(), [](char r) { return r != 0; });
  if (busy)
    fail(ZRT_ERR_INVALID_STATE,
         "{} needs the engine between optimizer steps (a micro-step or gradient accumulation "
         "is in progress)",
         what);
}

void Engine::finish_load(int64_t step, const LossScaler::State &scaler) {
  if (mixed())
    for (const OwnedRange &o : owned_) {
      OptimRange r = optim_range(o);
      kernels_->convert(r.weights, r.copy, settings_.dtype, r.count);
    }
  if (settings_.stage == 1 || settings_.stage == 2) gather_updated_params();
  if (settings_.stage == 3) drop_gathered();
  grads_.zero();
  micro_ = 0;
  reset_micro_step();
  step_ = step;
  scaler_.restore(scaler);
}

// --- memory ------------------------------------------------------------------------------

zrt_memory_report_t Engine::memory() const {
  require_committed("zrt_engine_memory");
  zrt_memory_report_t r{};
  r.parameter_count = static_cast<int64_t>(layout_.unpadded());
  r.parameters = static_cast<int64_t>(params_.size());
  r.gradients = static_cast<int64_t>(grads_.size());
  r.master_weights = static_cast<int64_t>(master_.size());
  r.optimizer_state = static_cast<int64_t>(m_.size() + v_.size());
  int64_t buckets = 0;
  for (const auto &b : bucket_buffers_)
    buckets += static_cast<int64_t>(b.size());
  for (const auto &s : scratch_)
    buckets += static_cast<int64_t>(s.size());
  for (const auto &g : gathered_)
    buckets += static_cast<int64_t>(g.size());
  r.buckets = buckets;
  r.total = r.parameters + r.gradients + r.master_weights + r.optimizer_state + r.buckets;
  return r;
}

}  // namespace zrt
