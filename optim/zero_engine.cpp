#include "optim/zero_engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "comm/dtype.hpp"
#include "memory/host_resource.hpp"
#include "memory/memory_part.hpp"
#include "memory/pool_block.hpp"
#include "optim/engine_part.hpp"
#include "optim/memory_fit.hpp"
#include "optim/param_allgather.hpp"
#include "runtime/agree.hpp"
#include "runtime/gpu/memory_kind.hpp"
#include "runtime/log.hpp"
#include "runtime/mpi_error.hpp"

namespace zrt {

Engine::Engine(Context &context, const EngineSettings &settings)
    : context_(context),
      settings_(settings),
      stage_(StageLayout::of(settings.stage)),
      lr_(settings.lr) {
  EnginePart &part = context.part<EnginePart>();
  kernels_ = &part.kernels();
  threads_ = &part.threads();
  Communicator::Options options;
  options.backend = context.config().get_string("comm.backend");
  options.deterministic = settings.deterministic;
  // The engine's reductions and gathers are watched like the program's collectives.
  options.timeout = context.config().get_double("comm.timeout");
  comm_ = std::make_unique<Communicator>(context, context.comm(), options, false);
  control_ = MpiComm::dup(context.comm());
  control_watch_ =
      std::make_unique<AgreementWatch>(control_, comm_->timeout(), context.shared_breakage());
  rank_ = comm_->rank();
  nranks_ = comm_->size();
  bool on_device = settings.memory_space == EngineMemorySpace::Device;
  if (settings.memory_space == EngineMemorySpace::Auto) {
    // The same answer on every rank, or the ranks' collectives would mix host and device.
    std::unique_ptr<char[]> buffer(new char[sizeof(int)]);
    int *have = reinterpret_cast<int *>(buffer.get());
    *have = context.part<MemoryPart>().device() != nullptr ? 1 : 0;
    MPI_Request request = MPI_REQUEST_NULL;
    check_watched(control_, "agreement on engine.memory_space = auto");
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, have, 1, MPI_INT, MPI_MIN, control_, &request),
              "MPI_Iallreduce(engine.memory_space = auto)");
    wait_watched(control_, &request, "agreement on engine.memory_space = auto", {}, buffer);
    on_device = *have == 1;
    // Agreed: every rank has the answer above.
    if (!on_device && (settings.offload_optimizer || settings.offload_param))
      fail(ZRT_ERR_NOT_SUPPORTED,
           "zero_optimization.{}.device cpu moves a device engine's state to host memory, and "
           "engine.memory_space auto put this engine in host memory (some rank has no device): "
           "its state is in host memory already. Remove the key, or run where every rank has "
           "a device",
           settings.offload_optimizer ? "offload_optimizer" : "offload_param");
  }
  memory_ = std::make_unique<EngineMemory>(context, on_device, settings.stream, *kernels_);
  scaler_ = LossScaler(settings.scaler);
  if (settings.scheduler.type != LrSchedulerType::None) scheduler_.emplace(settings.scheduler);
  log::debug("engine: stage {}, {}, in {} memory, {} kernels, {} optimizer thread(s)",
             settings.stage, dtype_name(settings.dtype), on_device ? "device" : "host",
             on_device ? memory_->kernels().name() : kernels_->isa, threads_->size());
}

Engine::~Engine() {
  // After an agreement of this engine (or anything else of the context) timed out the
  // ranks are out of step: nothing may wait for them again, so the communicator fails what
  // is in flight and keeps its MPI communicators, and so does control_.
  std::string failed = control_watch_ ? control_watch_->failure() : std::string();
  if (failed.empty() && context_.breakage().broken()) failed = context_.breakage().why();
  // A save destroy_engine could not settle (its ranks are gone): stopped, never published.
  if (pending_save_) pending_save_->abandon();
  pending_save_.reset();
  if (failed.empty() && !committed_ && !commit_failed_ && control_) {
    // Destroyed before its commit: the other ranks may be in theirs. This agreement is the
    // one their commit begins with, so they fail with this rank's reason rather than wait.
    try {
      agree_status(control_, ZRT_ERR_INVALID_STATE,
                   setup_error_.empty()
                       ? std::string("the engine was destroyed before zrt_engine_commit")
                       : setup_error_ + "; the engine was destroyed before zrt_engine_commit");
    } catch (const Error &e) {
      failed = e.what();  // timed out: the others are gone or stuck
    }
  }
  if (!failed.empty() && comm_) comm_->give_up(failed);
  // Collectives still in flight read and write our buffers: the parts wait for them as they
  // go, before the buffers and the communicator.
  reset_parts();
  // The engine's stream may still touch the buffers: it finishes before they are freed.
  if (memory_) memory_->synchronize();
  state_ = ModelState();
  memory_.reset();
  comm_.reset();
  control_watch_.reset();
  if (!failed.empty() || keep_control_) control_.abandon();
}

void Engine::require_committed(const char *what) const {
  if (!committed_)
    fail(ZRT_ERR_INVALID_STATE, "{} needs a committed engine: call zrt_engine_commit first", what);
}

int Engine::register_param(const char *name, zrt_dtype_t dtype, int ndim, const int64_t *shape) {
  require_nonnull(name, "name");
  if (committed_)
    fail(ZRT_ERR_INVALID_STATE,
         "cannot register '{}': the engine is committed; register every parameter before "
         "zrt_engine_commit",
         name);
  try {
    return params_.add(name, dtype, settings_.dtype, ndim, shape);
  } catch (const Error &e) {
    if (setup_error_.empty())
      setup_error_ =
          fmt::format("zrt_param_register('{}') failed on this rank: {}", name, e.what());
    throw;
  }
}

void Engine::commit() {
  try {
    commit_agreed();
  } catch (const Error &e) {
    // Agreed failures are every rank's (nothing more to agree at destroy); a timeout is not.
    if (e.status() != ZRT_ERR_TIMEOUT) commit_failed_ = true;
    throw;
  }
}

void Engine::commit_agreed() {
  run_agreed(control_, [&] {
    if (committed_) fail(ZRT_ERR_INVALID_STATE, "the engine is already committed");
  });
  params_.check_same_on_every_rank(control_, rank_);

  const size_t es = dtype_size(settings_.dtype);
  layout_ = Layout(params_.all(), std::max<size_t>(settings_.reduce_bucket_bytes / es, 1), nranks_);
  params_.place(layout_);
  // What an earlier, failed commit made goes first: its buffers would fill the window.
  reset_parts();
  state_ = ModelState();
  // Before anything is allocated: a model that cannot fit says so, rather than grow until
  // a memory cgroup's kernel kills the job without a word.
  run_agreed(control_, [&] {
    check_engine_fits(context_.part<MemoryPart>(), settings_, layout_, nranks_,
                      memory_->on_device(), window_ranks());
  });
  share_buffers();
  run_agreed(control_, [&] {
    state_ = ModelState(*memory_, stage_, layout_, settings_);
    reducer_ = std::make_unique<GradientReducer>(*comm_, *memory_, layout_, stage_, state_,
                                                 settings_, comm_stats_, step_);
    if (stage_.gather_on_use)
      gatherer_ = std::make_unique<ParamGatherer>(*comm_, *memory_, layout_, state_, settings_,
                                                  comm_stats_, step_);
    optimizer_ = std::make_unique<OptimizerStep>(settings_, *kernels_, *threads_, control_,
                                                 *memory_, layout_, stage_, state_, params_, rank_);
    if (ModelState::speculates(settings_, memory_->on_device())) {
      speculative_ =
          std::make_unique<SpeculativeStep>(*optimizer_, state_, settings_, scaler_.dynamic());
      reducer_->set_offload_hooks(
          [this](int bucket, Event arrived) {
            // Paused after repeated redos: this step updates after backward only.
            if (step_ < speculate_from_) return;
            // A background save may still be copying the state the update changes.
            wait_for_snapshot();
            speculative_->bucket_landed(
                bucket, std::move(arrived),
                update_key(1.0 / (scaler_.scale() * settings_.accumulation_steps)));
          },
          // Gradients dropped without a commit (a skipped or abandoned step): what the CPU
          // did with them is undone.
          [this] {
            speculative_->finish();
            speculative_->roll_back();
          });
    }
    memory_->synchronize();  // the zeroed buffers, before the program writes any
  });
  // After the agreed part, which every rank passed: this agreement is collective too.
  const size_t params_bytes = StageLayout::elements(stage_.params, layout_) * es;
  push_ = ParamPush::make(*comm_, control_, state_.params(0), params_bytes,
                          !memory_->on_device() && stage_.gather_after_step && !settings_.mixed() &&
                              !state_.offload_to_host() && !speculative_ &&
                              state_.params_place() == Place::Shared &&
                              optimizer_->updates_within(state_.params(0), params_bytes));
  optimizer_->set_push(push_.get());
  if (push_) log::debug("engine: the owners write the updated parameters into the peers' buffers");
  committed_ = true;
  log::debug("engine committed: {} parameters, {} elements ({} padded) in {} buckets",
             param_count(), layout_.unpadded(), layout_.total(), layout_.buckets().size());
  if (state_.partial())
    log::debug(
        "engine: {:.1f}% of the optimizer state offloaded to the CPU (ratio {} asked), "
        "the rest updated on the device",
        100 * offload_share(), settings_.offload_ratio);
}

double Engine::offload_share() const {
  if (!committed_ || !state_.offload_to_host()) return 0;
  const size_t shard = StageLayout::elements(stage_.state, layout_);
  return static_cast<double>(shard - state_.host_begin()) / static_cast<double>(shard);
}

void Engine::reset_parts() {
  if (reducer_) reducer_->set_offload_hooks({}, {});
  speculative_.reset();  // after the updates it runs
  optimizer_.reset();
  push_.reset();
  gatherer_.reset();
  reducer_.reset();
}

SpeculativeStep::Key Engine::update_key(double unscale) const {
  // As step() computes them: clipping off (a factor of 1), the rate of the next update.
  return {static_cast<float>(unscale * 1.0), lr(), step_, params_.decay_version()};
}

int Engine::window_ranks() const {
  // Only where a collective reads its peers' buffers in place: a private backend (MPI, UCX)
  // or a lone rank gains nothing from a window, and a device engine's buffers are device
  // memory. Every rank decides alike: the settings are agreed and the backend is chosen
  // for the whole communicator.
  if (!settings_.shared_buffers || memory_->on_device()) return 0;
  if (memory_->shared()) return memory_->shared_peers();
  const int peers = comm_->memory().shared_peers();
  return peers >= 2 ? peers : 0;
}

void Engine::share_buffers() {
  // A commit tried again after an agreed failure keeps the window of the first try.
  if (window_ranks() == 0 || memory_->shared()) return;
  const size_t page = page_size();
  size_t bytes = 0;
  auto add = [&](const std::vector<size_t> &buffers) {
    for (size_t b : buffers)
      bytes += round_up(b, page);
  };
  add(ModelState::shared_buffers(stage_, layout_, settings_));
  add(GradientReducer::initial_buffers(layout_, stage_, settings_, false));
  if (stage_.gather_on_use) add(ParamGatherer::shared_buffers(layout_, settings_));
  if (bytes == 0) return;
  try {
    memory_->share(comm_->memory(), bytes);
  } catch (const Error &e) {
    // The window's allocation fails on every rank together (a timeout is not agreed), and
    // so does the pool over it: its options are the same everywhere.
    if (e.status() == ZRT_ERR_TIMEOUT) throw;
    if (rank_ == 0)
      log::warn("engine: no node-shared window of {} bytes ({}); the buffers stay private", bytes,
                e.what());
    return;
  }
  log::debug("engine: a node-shared window of {} bytes over {} ranks", bytes,
             memory_->shared_peers());
}

void Engine::set_lr(double lr) {
  // Both would believe their rate is the one used; the scheduler would overwrite this one.
  if (scheduler_)
    fail(ZRT_ERR_INVALID_STATE,
         "the learning rate follows the scheduler {} (scheduler.type from {}): remove the "
         "scheduler, or set {{\"scheduler\": {{\"type\": \"none\"}}}} in the engine's "
         "params->settings to set the rate from the program",
         lr_scheduler_name(scheduler_->settings().type), scheduler_->settings().origin);
  if (!(lr >= 0) || !std::isfinite(lr))
    fail(ZRT_ERR_INVALID_ARGUMENT, "lr is {}: it must be a finite value >= 0", lr);
  lr_ = lr;
}

void Engine::set_weight_decay(int index, double weight_decay) {
  undo_speculation();  // the CPU step reads the decays; the step redoes it with the new one
  params_.set_weight_decay(index, weight_decay);
}

// --- parameters ------------------------------------------------------------------------

void Engine::undo_speculation() {
  if (!speculative_) return;
  speculative_->finish();
  speculative_->roll_back();
}

void Engine::set_param(int index, const void *values, zrt_dtype_t dtype) {
  require_committed("zrt_param_set");
  wait_for_snapshot();
  undo_speculation();  // the step then updates after backward, from these values
  // Offloaded parameters: the gathers' copies from the shard on the engine's stream first.
  if (state_.params_on_host()) memory_->synchronize();
  require_nonnull(values, "values");
  const ParamInfo &p = param(index);
  if (memory_kind(values) == MemoryKind::Device)
    fail(ZRT_ERR_INVALID_ARGUMENT,
         "values of '{}' are device memory: zrt_param_set reads host memory (copy them to the "
         "host first)",
         p.name);
  if (dtype != ZRT_DTYPE_FP32 && dtype != settings_.dtype)
    fail(ZRT_ERR_INVALID_ARGUMENT, "values of '{}' must be fp32 or the compute dtype {}, not {}",
         p.name, dtype_name(settings_.dtype), dtype_name(dtype));
  const size_t vs = dtype_size(dtype);
  const char *src = static_cast<const char *>(values);

  // Each buffer that holds the parameter gets the part of it this rank stores: all of it in
  // a full buffer, the intersection with its slice of each of the parameter's buckets in a
  // shard. Device memory gets it converted on the host first, through the engine's stream.
  std::vector<std::vector<char>> staged;
  auto convert_to = [&](const char *from, void *dst, Place place, zrt_dtype_t to, size_t n) {
    if (place != Place::Device) return convert_values(from, dtype, dst, to, n);
    staged.emplace_back(n * dtype_size(to));
    convert_values(from, dtype, staged.back().data(), to, n);
    memory_->copy(dst, staged.back().data(), staged.back().size());
  };
  // destination(range, i): where element i of the rank's range goes; place_of(range): its
  // kind of memory (a partial offload keeps the weights in two).
  auto store = [&](Extent extent, auto &&destination, zrt_dtype_t to, auto &&place_of) {
    if (extent == Extent::Full) {
      const OwnedRange whole{p.bucket, rank_, p.offset, p.offset, p.numel};
      convert_to(src, destination(whole, 0), place_of(whole), to, p.numel);
      return;
    }
    for (int k = p.bucket; k < p.bucket + p.buckets; ++k) {
      OwnedRange mine = StageLayout::slice_of(layout_, layout_.bucket(k), rank_);
      size_t from = std::max(p.offset, mine.flat),
             to_end = std::min(p.offset + p.numel, mine.flat + mine.count);
      if (to_end <= from) continue;
      convert_to(src + (from - p.offset) * vs, destination(mine, from - mine.flat), place_of(mine),
                 to, to_end - from);
    }
  };
  store(
      stage_.params,
      [&](const OwnedRange &o, size_t i) { return state_.params(o.index(stage_.params) + i); },
      settings_.dtype, [&](const OwnedRange &) { return state_.params_place(); });
  if (settings_.mixed() || state_.offload_to_host())
    store(
        stage_.state, [&](const OwnedRange &o, size_t i) { return state_.range(o).weights + i; },
        ZRT_DTYPE_FP32, [&](const OwnedRange &o) { return state_.state_place(o); });
  if (!staged.empty()) memory_->synchronize();  // the staged values, before they go
  // Set again after a failed load: this parameter's weights are the program's now.
  if (!incomplete_.empty()) {
    incomplete_[static_cast<size_t>(index)] = 0;
    if (std::count(incomplete_.begin(), incomplete_.end(), 1) == 0) incomplete_.clear();
  }
}

void Engine::get_param(int index, void *values, zrt_dtype_t dtype) {
  run_agreed(control_, [&] {
    require_committed("zrt_param_get");
    require_nonnull(values, "values");
    dtype_size(dtype);
  });
  // The weights as they are before the step: a CPU step run during backward is undone
  // (the step redoes it after backward, to the same bits).
  undo_speculation();
  const ParamInfo &p = param(index);
  if (stage_.updates_everything) {
    const OwnedRange whole{p.bucket, rank_, p.offset, p.offset, p.numel};
    const float *weights = state_.range(whole).weights;
    std::vector<float> staged;
    if (state_.state_place(whole) == Place::Device) {
      staged.resize(p.numel);
      copy_state(staged.data(), weights, p.numel * sizeof(float));
      weights = staged.data();
    }
    convert_values(weights, ZRT_DTYPE_FP32, values, dtype, p.numel);
    return;
  }
  // The fp32 weights live with the slice owners: gather the parameter's buckets.
  std::vector<float> group =
      gather_param_weights(*comm_, *memory_, layout_, state_, p, comm_stats_, step_);
  const BucketInfo &g = layout_.bucket(p.bucket);
  convert_values(group.data() + (p.offset - g.group_offset), ZRT_DTYPE_FP32, values, dtype,
                 p.numel);
}

void *Engine::param_data(int index) {
  require_committed("zrt_param_data");
  const ParamInfo &p = param(index);
  if (gatherer_) return gatherer_->data(index);
  return state_.params(p.offset);
}

void Engine::gather(int index) {
  require_committed("zrt_param_gather");
  if (!gatherer_) return;
  param(index);
  gatherer_->gather(index);
}

void Engine::release(int index) {
  require_committed("zrt_param_release");
  if (!gatherer_) return;
  param(index);
  gatherer_->release(index);
}

// --- gradients ---------------------------------------------------------------------------

void *Engine::grad_data(int index) {
  require_committed("zrt_param_grad_data");
  param(index);
  return reducer_->grad_data(index, false, nullptr);
}

void *Engine::grad_buffer(int index, bool *overwrite) {
  require_committed("zrt_param_grad_buffer");
  param(index);
  return reducer_->grad_data(index, true, overwrite);
}

void Engine::grad_ready(int index) {
  require_committed("zrt_param_grad_ready");
  param(index);
  reducer_->grad_ready(index);
}

// --- the step ----------------------------------------------------------------------------

void Engine::validate_ready(const std::function<void()> &check) {
  // Post what is ready first: another rank may be waiting for those reductions, and the
  // agreement below blocks.
  if (committed_) reducer_->post_ready();
  try {
    // Agreed: a rank that is not ready must not leave the others waiting in the reductions.
    // Our posted reductions keep progressing meanwhile: other ranks may be waiting on them.
    run_agreed(
        control_,
        [&] {
          if (check) check();
          require_committed("zrt_engine_step");
          require_complete_state("zrt_engine_step");
          if (int missing = reducer_->first_not_ready(); missing >= 0)
            fail(ZRT_ERR_INVALID_STATE,
                 "the gradient of '{}' was not made ready (zrt_param_grad_ready) before "
                 "zrt_engine_step",
                 param(missing).name);
        },
        [this] { comm_->progress(); });
  } catch (const Error &e) {
    // A timeout means the ranks are out of step: nothing more may wait for them.
    if (e.status() == ZRT_ERR_TIMEOUT) throw;
    // Every rank is here (the failure was agreed). When a gradient is missing on some rank,
    // keep the ranks in step and the engine usable: reduce what is left as it stands and
    // drop this micro-step's gradients. When nothing is missing (a bad report struct, say),
    // change nothing: the posted reductions finish in the retried step. The choice must be
    // the same on every rank, since dropping posts the remaining buckets.
    // An engine refused for a failed load drops them too, so that it is between steps
    // again, where a load or zrt_param_set can mend it.
    int missing = committed_ && (reducer_->first_not_ready() >= 0 || !incomplete_.empty()) ? 1 : 0;
    watched_allreduce(control_, &missing, 1, MPI_INT, MPI_MAX, "agreement on missing gradients");
    if (committed_ && missing) reducer_->abandon_micro_step();
    throw;
  }
}

StepReport Engine::step(const std::function<void()> &check) {
  // A background save that failed is reported here, on every rank, before the step changes
  // anything: calling the step again takes it. The step changes what a save still copying
  // the state reads: that copy comes first.
  wait_for_snapshot();
  settle_save(false);
  validate_ready(check);
  StepReport report;
  report.lr = lr();  // before the step count moves on
  // The last micro-step reports the offload copies of the whole accumulation, by then
  // complete (end_accumulation synchronizes).
  auto offload_times = [&] {
    const EngineMemory::OffloadTimes t = memory_->take_offload_times();
    report.offload_copy_seconds = t.copy_seconds;
    report.offload_exposed_seconds = t.exposed_seconds;
  };
  if (!reducer_->last_micro_step()) {
    reducer_->drain();
    reducer_->next_micro_step();
    report.comm = comm_stats_.take();
    report.step = step_;
    report.skipped_steps = skipped_steps_;
    report.loss_scale = scaler_.scale();
    return report;
  }
  reducer_->finish();  // the reduced gradients are where the optimizer reads them
  if (gatherer_) {
    gatherer_->finish_prefetch();
    gatherer_->drop_all();
  }

  const double unscale = 1.0 / (scaler_.scale() * settings_.accumulation_steps);
  // The CPU step during backward: what is left of it, and whether it covered the whole
  // shard with what this step uses.
  double cpu_seconds = 0, cpu_exposed = 0;
  bool speculated = false;
  if (speculative_) {
    cpu_exposed += speculative_->finish();
    speculated = speculative_->complete(update_key(unscale));
  }
  auto cpu_times = [&] {
    if (speculative_) cpu_seconds += speculative_->take_cpu_seconds();
    report.offload_cpu_seconds = cpu_seconds;
    report.offload_cpu_exposed_seconds = cpu_exposed;
  };
  // A skipped update: every rank decided it alike (both checks below are agreed), and
  // nothing but the loss scale and the counters changes.
  auto skip = [&](double norm) {
    if (scaler_.dynamic()) scaler_.update(true);
    reducer_->end_accumulation();  // rolls a speculative update back
    cpu_times();
    ++skipped_steps_;
    report.skipped = true;
    report.step = step_;
    report.skipped_steps = skipped_steps_;
    report.loss_scale = scaler_.scale();
    report.grad_norm = norm;
    offload_times();  // end_accumulation synchronized
    report.comm = comm_stats_.take();
    return report;
  };
  bool known_overflow = speculated && speculative_->non_finite();
  if (scaler_.dynamic() && optimizer_->overflow(speculated ? &known_overflow : nullptr)) {
    StepReport skipped = skip(std::numeric_limits<double>::infinity());
    log::info("step {}: gradient overflow on some rank, step skipped, loss scale now {}", step_,
              skipped.loss_scale);
    return skipped;
  }
  const double norm =
      std::sqrt(optimizer_->grad_norm_squared(speculated ? &speculative_->range_sums() : nullptr)) *
      unscale;
  // The norm is agreed across ranks, so is this: a NaN or Inf gradient anywhere (fp32 and
  // bf16 have no loss scaler to catch it) skips the update on every rank.
  if (settings_.check_grad_overflow && !std::isfinite(norm)) {
    if (rank_ == 0)  // agreed, so one rank says it for all
      log::warn(
          "update {} skipped on every rank: the gradient norm is {} (a NaN or Inf gradient on "
          "some rank); parameters and optimizer state unchanged",
          step_ + 1, norm);
    return skip(norm);
  }
  double clip = 1;
  if (settings_.gradient_clipping > 0 && norm > settings_.gradient_clipping)
    clip = settings_.gradient_clipping / (norm + 1e-6);
  if (speculated && clip == 1) {
    speculative_->commit();  // the update backward hid is this step's, bit for bit
    // A partial offload's device part is updated now, on the device.
    if (state_.partial()) {
      optimizer_->run(static_cast<float>(unscale), report.lr, step_, /*device_only=*/true);
      memory_->synchronize();  // not counted as a wait for the offload's copies
    }
    redo_streak_ = 0;
    redo_pause_ = 1;
  } else {
    // Clipping changed the update (or the CPU step did not cover the shard): the ranges
    // it updated go back to their saved values, and the step updates after backward.
    const auto t0 = std::chrono::steady_clock::now();
    if (speculative_ && speculative_->begun()) {
      log::debug("step {}: the CPU step during backward is redone after it: {}", step_ + 1,
                 speculated ? "clipping changed the update"
                            : "the rate, loss scale or a weight decay changed after it began, "
                              "or the state was read or set between backward and the step");
      // A redo costs more than not speculating: after two in a row (clipping acts on most
      // early steps of a run), the CPU steps after backward for 1, 2, 4 ... 64 steps, then
      // tries again. The result is the same bits either way.
      if (++redo_streak_ >= 2) {
        speculate_from_ = step_ + 1 + redo_pause_;
        log::debug("the CPU step during backward pauses for {} step(s)", redo_pause_);
        redo_pause_ = std::min<int64_t>(2 * redo_pause_, 64);
        redo_streak_ = 0;
      }
    }
    if (speculative_) speculative_->roll_back();
    optimizer_->run(static_cast<float>(unscale * clip), report.lr, step_);
    if (state_.offload_to_host()) {
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      cpu_seconds += t;
      cpu_exposed += t;
    }
  }
  optimizer_->refresh_compute_copies(false);
  // With a push the update above was the optimizer's run (push_ rules out the speculative
  // step), which wrote every rank's slices: only the barrier is left.
  refresh_params(/*pushed=*/push_ != nullptr);

  reducer_->end_accumulation();
  cpu_times();
  ++step_;
  scaler_.update(false);
  offload_times();
  report.comm = comm_stats_.take();
  report.applied = true;
  report.step = step_;
  report.skipped_steps = skipped_steps_;
  report.loss_scale = scaler_.scale();
  report.grad_norm = norm;
  // DeepSpeed's progress line (steps_per_print), asked for by the key itself: written
  // whatever log_level filters.
  if (settings_.steps_per_print > 0 && step_ % settings_.steps_per_print == 0 && rank_ == 0)
    log::write(ZRT_LOG_INFO, fmt::format("step {}: lr {:.6g}, loss scale {}, skipped steps {}",
                                         step_, report.lr, report.loss_scale, skipped_steps_));
  return report;
}

void Engine::refresh_params(bool pushed) {
  if (stage_.gather_after_step && pushed)
    push_->finish(control_, layout_, settings_.dtype, comm_stats_);
  else if (stage_.gather_after_step)
    all_gather_updated_params(*comm_, *memory_, layout_, state_, settings_.dtype,
                              settings_.allgather_bucket_bytes, comm_stats_, step_);
  if (gatherer_) gatherer_->drop_all();
}

void Engine::copy_state(void *dst, const void *src, size_t bytes) {
  memory_->copy(dst, src, bytes);
  memory_->synchronize();
}

// --- checkpoints -------------------------------------------------------------------------

std::vector<Engine::StatePiece> Engine::state_pieces() const {
  require_committed("a checkpoint");
  std::vector<StatePiece> out;
  for (const OptimizerStep::Piece &p : optimizer_->param_pieces())
    out.push_back({p.param, p.owner, p.param_offset, p.range.count, p.range.weights, p.range.m,
                   p.range.v, p.on_device});
  return out;
}

void Engine::require_between_steps(const char *what) const {
  require_committed(what);
  if (!reducer_->idle() || (gatherer_ && gatherer_->prefetching()))
    fail(ZRT_ERR_INVALID_STATE,
         "{} needs the engine between optimizer steps (a micro-step or gradient accumulation "
         "is in progress)",
         what);
}

EngineBuffer Engine::checkpoint_staging(size_t bytes) {
  return EngineBuffer(*memory_, Place::Pinned, bytes, Lifetime::Transient, false);
}

void Engine::settle_save(bool wait) {
  if (!pending_save_) return;
  std::shared_ptr<PendingSave> save = pending_save_;
  try {
    if (save->settle(wait)) pending_save_.reset();
  } catch (...) {
    pending_save_.reset();
    throw;
  }
}

void Engine::mark_state_incomplete(std::string why) {
  incomplete_.assign(static_cast<size_t>(param_count()), 1);
  incomplete_why_ = std::move(why);
}

void Engine::require_complete_state(const char *what) const {
  if (incomplete_.empty()) return;
  const size_t left = static_cast<size_t>(std::count(incomplete_.begin(), incomplete_.end(), 1));
  const size_t first = static_cast<size_t>(std::find(incomplete_.begin(), incomplete_.end(), 1) -
                                           incomplete_.begin());
  fail(ZRT_ERR_INVALID_STATE,
       "{} refused: {}, and the engine holds part of that file's state and part of its own. "
       "Load a checkpoint, or set every parameter with zrt_param_set ({} of {} not set since, "
       "the first '{}')",
       what, incomplete_why_, left, incomplete_.size(), param(static_cast<int>(first)).name);
}

void Engine::finish_load(int64_t step, const LossScaler::State &scaler) {
  require_committed("zrt_checkpoint_load");
  incomplete_.clear();
  optimizer_->refresh_compute_copies(true);
  refresh_params();
  reducer_->end_accumulation();
  step_ = step;
  scaler_.restore(scaler);
}

// --- memory ------------------------------------------------------------------------------

MemoryReport Engine::memory() const {
  require_committed("zrt_engine_memory");
  MemoryReport r;
  r.parameter_count = static_cast<int64_t>(layout_.unpadded());
  r.parameters = static_cast<int64_t>(state_.params_bytes());
  r.gradients = static_cast<int64_t>(state_.grads_bytes());
  r.master_weights = static_cast<int64_t>(state_.master_bytes());
  r.optimizer_state = static_cast<int64_t>(state_.moments_bytes());
  const size_t buckets = reducer_->buffer_bytes() + (gatherer_ ? gatherer_->buffer_bytes() : 0);
  r.buckets = static_cast<int64_t>(buckets);
  // Buckets and gathered groups live where the parameters do.
  const bool device = memory_->on_device();
  r.device_bytes = static_cast<int64_t>(state_.device_bytes() + (device ? buckets : 0));
  r.host_bytes = static_cast<int64_t>(state_.host_bytes() + (device ? 0 : buckets));
  r.node_shared_bytes = static_cast<int64_t>(state_.shared_bytes() + reducer_->shared_bytes() +
                                             (gatherer_ ? gatherer_->shared_bytes() : 0));
  r.node_shared_ranks = memory_shared_ranks();
  if (gatherer_) {
    r.gather_fetches = gatherer_->fetches();
    r.gather_evictions = gatherer_->evictions();
  }
  return r;
}

}  // namespace zrt
