#include <zerort/nn/engine_model_state.hpp>

#include <zerort/comm.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <zerort/nn/matmul.hpp>
#include <zerort/nn/tensor.hpp>
#include <zerort/nn/tensor_spec.hpp>

namespace zrt::nn {

using zrt::nn::CVec;
using zrt::nn::ExecSpace;
using zrt::nn::GradBuffer;
using zrt::nn::MemSpace;
using zrt::nn::RangePolicy;
using zrt::nn::TensorSpec;
using zrt::nn::Unmanaged;
using zrt::nn::Vec;
// Kernels live in free functions of a named namespace: CUDA's extended lambdas may not be
// defined in private member functions nor with internal linkage.
namespace engine_store_kernels {

// The engine's buffers as Views: host memory, or the execution space's memory when the
// engine lives on the device (a CUDA build; on the emulated device its memory is host
// memory, which a host build's execution space reads).
template <class Space>
using EngineBytes = Kokkos::View<uint16_t *, Space, Unmanaged>;
template <class Space>
using EngineFloats = Kokkos::View<float *, Space, Unmanaged>;

KOKKOS_INLINE_FUNCTION float bf16_to_float(uint16_t h) {
  union {
    uint32_t u;
    float f;
  } bits{uint32_t{h} << 16};
  return bits.f;
}

// Round to nearest even, as zerort converts; NaN stays a (quiet) NaN.
KOKKOS_INLINE_FUNCTION uint16_t float_to_bf16(float f) {
  union {
    float f;
    uint32_t u;
  } bits{f};
  uint32_t u = bits.u;
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// dst (fp32, execution space) = the engine's values at @p src (in Space, @p dtype).
template <class Space>
void load_values(Vec<float> dst, void *src, zrt_dtype_t dtype) {
  const size_t n = dst.extent(0);
  if (dtype == ZRT_DTYPE_FP32) {
    Kokkos::deep_copy(dst, EngineFloats<Space>(static_cast<float *>(src), n));
    return;
  }
  // A copy only where the execution space cannot read the engine's memory.
  auto raw = Kokkos::create_mirror_view_and_copy(
      MemSpace(), EngineBytes<Space>(static_cast<uint16_t *>(src), n));
  Kokkos::parallel_for(
      "engine_load_bf16", RangePolicy(0, static_cast<int64_t>(n)),
      KOKKOS_LAMBDA(int64_t i) { dst(i) = bf16_to_float(raw(i)); });
}

// The engine's gradient at @p dst (in Space, @p dtype) += src (fp32, execution space),
// rounded once to the engine's dtype.
template <class Space>
void add_grads(void *dst, zrt_dtype_t dtype, CVec<float> src) {
  const size_t n = src.extent(0);
  if (dtype == ZRT_DTYPE_FP32) {
    EngineFloats<Space> host(static_cast<float *>(dst), n);
    auto g = Kokkos::create_mirror_view_and_copy(MemSpace(), host);
    Kokkos::parallel_for(
        "engine_add_fp32", RangePolicy(0, static_cast<int64_t>(n)),
        KOKKOS_LAMBDA(int64_t i) { g(i) += src(i); });
    Kokkos::deep_copy(host, g);  // nothing to do when g is host itself
    return;
  }
  EngineBytes<Space> host(static_cast<uint16_t *>(dst), n);
  auto g = Kokkos::create_mirror_view_and_copy(MemSpace(), host);
  Kokkos::parallel_for(
      "engine_add_bf16", RangePolicy(0, static_cast<int64_t>(n)),
      KOKKOS_LAMBDA(int64_t i) { g(i) = float_to_bf16(bf16_to_float(g(i)) + src(i)); });
  Kokkos::deep_copy(host, g);
}

}  // namespace engine_store_kernels

namespace {

// zerort's messages begin with the function that failed.
void check(zrt_status_t rc) {
  if (rc != ZRT_SUCCESS) throw StatusError(rc, zrt_last_error_message());
}

// The engine's buffers, or fp32 staging buffers in the execution space (see the header).
class EngineParameterStore final : public ParameterStore<float> {
 public:
  EngineParameterStore(zrt_engine_h engine, std::vector<TensorSpec> tensors,
                       std::vector<zrt_param_h> handles, zrt_dtype_t dtype, bool on_device)
      : engine_(engine),
        tensors_(std::move(tensors)),
        handles_(std::move(handles)),
        dtype_(dtype),
        on_device_(on_device),
        // A device engine on a device execution space orders its work with Kokkos' stream
        // (zrt_engine_set_stream): no fence is needed before handing it a buffer.
        stream_ordered_(on_device &&
                        !Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible),
        direct_(dtype == ZRT_DTYPE_FP32 &&
                (on_device
                     ? bool(Kokkos::SpaceAccessibility<ExecSpace, MemSpace>::accessible)
                     : bool(Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible))),
        values_(tensors_.size()),
        grads_(tensors_.size()) {}

  bool direct() const { return direct_; }

  const std::vector<TensorSpec> &tensors() const override { return tensors_; }

  void set(int id, const float *host_values) override {
    check(zrt_param_set(engine_, handle(id), host_values, ZRT_DTYPE_FP32));
  }

  void get(int id, float *host_values) override {
    check(zrt_param_get(engine_, handle(id), host_values, ZRT_DTYPE_FP32));
  }

  void gather(int id) override {
    check(zrt_param_gather(engine_, handle(id)));
    if (direct_) return;
    auto &v = values_[static_cast<size_t>(id)];
    v = take_staging(static_cast<size_t>(numel(id)));
    Vec<float> dst(v.data(), v.extent(0));
    if (on_device_)
      engine_store_kernels::load_values<MemSpace>(dst, engine_values(id), dtype_);
    else
      engine_store_kernels::load_values<Kokkos::HostSpace>(dst, engine_values(id), dtype_);
  }

  void release(int id) override {
    // Kernels may still read the values (asynchronous back ends); at stage 3 the engine
    // may reuse the memory once released.
    if (!stream_ordered_) Kokkos::fence();
    if (!direct_) give_staging(values_[static_cast<size_t>(id)]);
    check(zrt_param_release(engine_, handle(id)));
  }

  float *values(int id) override {
    if (direct_) return static_cast<float *>(engine_values(id));
    const auto &v = values_[static_cast<size_t>(id)];
    if (v.data() == nullptr)
      throw std::logic_error(
          fmt::format("values of {} used outside gather/release", tensors_[size_t(id)].name));
    return v.data();
  }

  GradBuffer<float> grad(int id) override {
    if (direct_) {
      // Backward overwrites where the engine hands out a fresh buffer (stages 2-3), sparing
      // it the zeroing; it adds where the buffer holds the earlier micro-steps' sum.
      void *g = nullptr;
      zrt_grad_write_t write = ZRT_GRAD_WRITE_ADD;
      check(zrt_param_grad_buffer(engine_, handle(id), &g, &write));
      return {static_cast<float *>(g), write == ZRT_GRAD_WRITE_ADD};
    }
    auto &g = grads_[static_cast<size_t>(id)];
    g = take_staging(static_cast<size_t>(numel(id)));
    return {g.data(), false};  // backward overwrites it; grad_ready adds it to the engine's
  }

  void grad_ready(int id) override {
    if (!stream_ordered_) Kokkos::fence();  // the engine reads the gradient once it is ready
    if (!direct_) {
      auto &g = grads_[static_cast<size_t>(id)];
      if (g.data() == nullptr)
        throw std::logic_error(
            fmt::format("gradient of {} made ready without grad()", tensors_[size_t(id)].name));
      void *dst = nullptr;
      check(zrt_param_grad_data(engine_, handle(id), &dst));
      CVec<float> src(g.data(), g.extent(0));
      if (on_device_)
        engine_store_kernels::add_grads<MemSpace>(dst, dtype_, src);
      else
        engine_store_kernels::add_grads<Kokkos::HostSpace>(dst, dtype_, src);
      if (!stream_ordered_) Kokkos::fence();
      give_staging(g);
    }
    check(zrt_param_grad_ready(engine_, handle(id)));
  }

 private:
  zrt_param_h handle(int id) const {
    if (id < 0 || static_cast<size_t>(id) >= handles_.size())
      throw std::out_of_range(fmt::format("parameter id {} is not in the layout", id));
    return handles_[static_cast<size_t>(id)];
  }
  int64_t numel(int id) const { return tensors_[static_cast<size_t>(id)].numel(); }
  void *engine_values(int id) {
    void *data = nullptr;
    check(zrt_param_data(engine_, handle(id), &data));
    return data;
  }

  zrt_engine_h engine_;
  std::vector<TensorSpec> tensors_;
  std::vector<zrt_param_h> handles_;
  zrt_dtype_t dtype_;
  bool on_device_;
  bool stream_ordered_;
  bool direct_;
  using Staging = Kokkos::View<float *, MemSpace>;
  std::vector<Staging> values_, grads_;  // staged, per tensor
  // Staging buffers not in use, by length, for the next gather or gradient of that length.
  // On CUDA an allocation is a cudaMalloc and a release a cudaFree, which waits for the
  // whole device: two of each per tensor and step would stall every step. Work on a
  // reused buffer is ordered after the work on its last use by Kokkos' one stream (or by
  // the fence above where the engine is not ordered with it). At most the largest number of
  // tensors staged at once is kept (every one at stages 0-2, the live ones at stage 3).
  std::unordered_map<size_t, std::vector<Staging>> spare_;

  Staging take_staging(size_t n) {
    auto &free = spare_[n];
    if (free.empty()) return Staging(Kokkos::view_alloc("staged", Kokkos::WithoutInitializing), n);
    Staging v = std::move(free.back());
    free.pop_back();
    return v;
  }

  void give_staging(Staging &v) {
    if (v.data() != nullptr) spare_[v.extent(0)].push_back(std::move(v));
    v = {};
  }
};

// "AdamW", "LAMB", ...: the optimizer as the log names it.
std::string optimizer_name(const std::string &resolved) {
  if (resolved == "adamw") return "AdamW";
  if (resolved == "lamb") return "LAMB";
  if (resolved == "adam") return "Adam";
  if (resolved == "sgd") return "SGD";
  return resolved;
}

class EngineModelState final : public ModelState {
 public:
  EngineModelState(zrt_context_h context, std::vector<TensorSpec> tensors, const EngineOptions &opt)
      : opt_(opt) {
    zrt_comm_h world = nullptr;
    check(zrt_context_comm(context, &world));
    check(zrt_comm_size(world, &ranks_));

    zrt_engine_params_t p = {};
    p.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE | ZRT_ENGINE_PARAM_FIELD_COMPUTE_DTYPE |
                   ZRT_ENGINE_PARAM_FIELD_OPTIMIZER | ZRT_ENGINE_PARAM_FIELD_LR |
                   ZRT_ENGINE_PARAM_FIELD_BETAS | ZRT_ENGINE_PARAM_FIELD_EPS |
                   ZRT_ENGINE_PARAM_FIELD_WEIGHT_DECAY | ZRT_ENGINE_PARAM_FIELD_GRADIENT_CLIPPING |
                   ZRT_ENGINE_PARAM_FIELD_GRADIENT_ACCUMULATION_STEPS |
                   ZRT_ENGINE_PARAM_FIELD_DETERMINISTIC | ZRT_ENGINE_PARAM_FIELD_MEMORY_SPACE |
                   ZRT_ENGINE_PARAM_FIELD_OFFLOAD_OPTIMIZER;
    p.field_mask &= ~opt.from_config;
    if (!opt.settings.empty()) {
      p.field_mask |= ZRT_ENGINE_PARAM_FIELD_SETTINGS;
      p.settings = opt.settings.c_str();
    }
    p.memory_space = opt.memory;
    p.stage = opt.stage;
    p.compute_dtype = opt.dtype;
    p.optimizer = opt.optimizer.kind;
    p.lr = opt.lr;
    p.beta1 = opt.optimizer.beta1;
    p.beta2 = opt.optimizer.beta2;
    p.eps = opt.optimizer.eps;
    p.weight_decay = opt.optimizer.weight_decay;
    p.gradient_clipping = opt.optimizer.grad_clip;
    p.gradient_accumulation_steps = opt.optimizer.accumulation_steps;
    p.deterministic = opt.deterministic ? 1 : 0;
    p.offload_optimizer = opt.offload_optimizer ? 1 : 0;
    if (opt.reduce_bucket_bytes > 0) {
      p.field_mask |= ZRT_ENGINE_PARAM_FIELD_REDUCE_BUCKET_BYTES |
                      ZRT_ENGINE_PARAM_FIELD_ALLGATHER_BUCKET_BYTES;
      p.reduce_bucket_bytes = p.allgather_bucket_bytes =
          static_cast<size_t>(opt.reduce_bucket_bytes);
    }
    if (opt.shared_buffers >= 0) {
      p.field_mask |= ZRT_ENGINE_PARAM_FIELD_SHARED_BUFFERS;
      p.shared_buffers = opt.shared_buffers;
    }
    if (opt.max_live_parameters >= 0) {
      p.field_mask |= ZRT_ENGINE_PARAM_FIELD_MAX_LIVE_PARAMETERS;
      p.max_live_parameters = static_cast<size_t>(opt.max_live_parameters);
    }
    check(zrt_engine_create(context, &p, &engine_));
    try {
      // What the engine resolved: the configuration file and the environment may set what
      // the options leave, and the environment wins over them.
      resolved_ = describe_engine();
      const std::string dtype = resolved_.at("compute_dtype").get<std::string>();
      if (dtype != "fp32" && dtype != "bf16")
        throw std::runtime_error(fmt::format(
            "the engine's compute dtype is {} ({}.enabled: {}): the trainers compute in fp32 or "
            "bf16",
            dtype, dtype, resolved_["settings"][dtype + ".enabled"].value("source", "?")));
      dtype_ = dtype == "bf16" ? ZRT_DTYPE_BF16 : ZRT_DTYPE_FP32;
      // bf16 compute: the matrix products on bf16 tensor cores where the backend has them
      // (cuBLAS), accumulating in fp32; the host's BLAS computes in fp32 either way.
      zrt::nn::set_gemm_precision(dtype_ == ZRT_DTYPE_BF16 ? zrt::nn::GemmPrecision::bf16
                                                           : zrt::nn::GemmPrecision::fp32);
      program_lr_ = resolved_.at("scheduler").at("type") == "none";
      std::vector<zrt_param_h> handles;
      for (const TensorSpec &t : tensors) {
        zrt_param_h h = nullptr;
        check(zrt_param_register(engine_, t.name.c_str(), dtype_, static_cast<int>(t.shape.size()),
                                 t.shape.data(), &h));
        if (!t.weight_decay) check(zrt_param_set_weight_decay(engine_, h, 0.0));
        handles.push_back(h);
      }
      check(zrt_engine_commit(engine_));
      zrt_memory_report_t where{};
      where.field_mask = ZRT_MEMORY_REPORT_FIELD_PLACEMENT;
      check(zrt_engine_memory(engine_, &where));
      on_device_ = where.device_bytes > 0;
#if defined(KOKKOS_ENABLE_CUDA)
      // The model's kernels run on Kokkos' stream: the engine orders its work with it.
      if (on_device_)
        check(zrt_engine_set_stream(engine_, Kokkos::DefaultExecutionSpace().cuda_stream()));
#endif
      store_ = std::make_unique<EngineParameterStore>(engine_, std::move(tensors),
                                                      std::move(handles), dtype_, on_device_);
    } catch (...) {
      zrt_engine_destroy(engine_);
      throw;
    }
  }

  ~EngineModelState() override {
    store_.reset();
    // A background save still writing is published by the destroy, which waits for it.
    if (pending_ != nullptr) {
      zrt_request_wait(pending_);
      zrt_request_free(pending_);
    }
    zrt_engine_destroy(engine_);
  }

  ParameterStore<float> &store() override {
    return *store_;
  }

  double loss_scale() const override {
    double scale = 1;
    check(zrt_engine_loss_scale(engine_, &scale));
    return scale;
  }

  const nlohmann::json &resolved() const {
    return resolved_;
  }

  void begin_step(std::optional<double> lr) override {
    if (lr && program_lr_) check(zrt_engine_set_lr(engine_, *lr));
  }

  StepReport step(std::optional<double> lr) override {
    // The engine's scheduler sets the rate itself (and refuses the program's).
    if (lr && program_lr_) check(zrt_engine_set_lr(engine_, *lr));
    if (lr && !program_lr_)
      throw std::logic_error("a learning rate given while the engine's scheduler sets it");
    Kokkos::fence();
    zrt_step_report_t r{};
    r.field_mask = ZRT_STEP_REPORT_FIELD_ALL;
    check(zrt_engine_step(engine_, &r));
    StepReport s;
    s.applied = r.applied != 0;
    s.skipped = r.skipped != 0;
    s.grad_norm = r.grad_norm;
    s.optimizer_steps = r.step;
    s.lr = r.lr;
    s.comm = {r.comm_wait_seconds, r.comm_reduce_scatter_bytes, r.comm_all_gather_bytes,
              r.comm_all_reduce_bytes};
    s.offload_copy_seconds = r.offload_copy_seconds;
    s.offload_copy_exposed_seconds = r.offload_exposed_seconds;
    s.offload_cpu_seconds = r.offload_cpu_seconds;
    s.offload_cpu_exposed_seconds = r.offload_cpu_exposed_seconds;
    return s;
  }

  StateMemory memory() const override {
    zrt_memory_report_t r{};
    r.field_mask = ZRT_MEMORY_REPORT_FIELD_ALL;
    check(zrt_engine_memory(engine_, &r));
    StateMemory m;
    m.parameters = r.parameters;
    m.gradients = r.gradients;
    m.master_weights = r.master_weights;
    m.optimizer_state = r.optimizer_state;
    m.buckets = r.buckets;
    m.node_shared_bytes = r.node_shared_bytes;
    return m;
  }

  int64_t stage0_bytes() const override {
    zrt_memory_report_t r{};
    r.field_mask = ZRT_MEMORY_REPORT_FIELD_ALL;
    check(zrt_engine_memory(engine_, &r));
    // fp32: 4 parameters + 4 gradients + 8 Adam moments; bf16: 2 + 2 + 4 master + 8.
    return 16 * r.parameter_count;
  }

  void save(const std::string &path, const std::string &metadata, bool background) override {
    wait_for_save();
    zrt_checkpoint_params_t p = {};
    p.field_mask = ZRT_CHECKPOINT_PARAM_FIELD_METADATA;
    p.metadata = metadata.c_str();
    if (background)
      check(zrt_checkpoint_save_post(engine_, path.c_str(), &p, &pending_));
    else
      check(zrt_checkpoint_save(engine_, path.c_str(), &p));
  }

  // The background save before, published (or its failure thrown).
  void wait_for_save() {
    if (pending_ == nullptr) return;
    zrt_request_h request = std::exchange(pending_, nullptr);
    const zrt_status_t waited = zrt_request_wait(request);
    // The wait's message, before the free (which cannot fail on an ended request).
    const std::string why = waited == ZRT_SUCCESS ? "" : zrt_last_error_message();
    zrt_request_free(request);
    if (waited != ZRT_SUCCESS) throw std::runtime_error(why);
  }

  void load(const std::string &path) override {
    wait_for_save();
    check(zrt_checkpoint_load(engine_, path.c_str()));
  }

  std::string describe() const override {
    const std::string dtype = resolved_.value("compute_dtype", "fp32");
    return fmt::format("zerort engine, ZeRO stage {} on {} rank(s), {}{}, {}{}, in {} memory{}{}",
                       resolved_.value("stage", opt_.stage), ranks_, dtype,
                       dtype != "fp32" ? " with fp32 master weights" : "",
                       optimizer_name(resolved_.value("optimizer", std::string("adamw"))),
                       resolved_.value("deterministic", false) ? ", deterministic" : "",
                       on_device_ ? "device" : "host",
                       resolved_.value("offload_optimizer", false)
                           ? " (optimizer state and step offloaded to the CPU)"
                           : "",
                       store_->direct() ? "" : " (tensors staged through fp32 buffers)") +
#if defined(KOKKOS_ENABLE_CUDA)
           fmt::format("; layers on CUDA, matrix products on {}", zrt::nn::gemm_backend_name());
#else
           // Said, since a GPU user may expect otherwise: only the engine is on the device.
           std::string(on_device_ ? "; layers on the host (a host build of the trainers: "
                                    "the preset gpu-kokkos computes on the GPU)"
                                  : "");
#endif
  }

 private:
  nlohmann::json describe_engine() const {
    size_t length = 0;
    check(zrt_engine_describe(engine_, nullptr, 0, &length));
    std::string text(length + 1, '\0');
    check(zrt_engine_describe(engine_, text.data(), text.size(), &length));
    text.resize(length);
    return nlohmann::json::parse(text);
  }

  zrt_request_h pending_ = nullptr;     // the background save in flight
  zrt_dtype_t dtype_ = ZRT_DTYPE_FP32;  // the engine's compute dtype
  bool program_lr_ = true;              // no scheduler: step() sets the rate
  EngineOptions opt_;
  nlohmann::json resolved_;  // zrt_engine_describe after commit
  int ranks_ = 1;
  bool on_device_ = false;
  zrt_engine_h engine_ = nullptr;
  std::unique_ptr<EngineParameterStore> store_;
};

}  // namespace

std::unique_ptr<ModelState> make_engine_model_state(zrt_context_h context,
                                                    const std::vector<TensorSpec> &layout,
                                                    const EngineOptions &options,
                                                    nlohmann::json *resolved_p) {
  if (options.stage < 0 || options.stage > 3)
    throw std::invalid_argument(
        fmt::format("ZeRO stage {}: it must be 0, 1, 2 or 3", options.stage));
  if (options.dtype != ZRT_DTYPE_FP32 && options.dtype != ZRT_DTYPE_BF16)
    throw std::invalid_argument("the trainers compute in fp32 or bf16");
  auto state = std::make_unique<EngineModelState>(context, layout, options);
  if (resolved_p != nullptr) *resolved_p = state->resolved();
  return state;
}

}  // namespace zrt::nn
