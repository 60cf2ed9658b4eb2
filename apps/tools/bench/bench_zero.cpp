#include "bench_zero.hpp"

#include <fmt/format.h>
#include <mpi.h>
#include <zerort/zerort.h>

#include <nlohmann/json.hpp>

#if ZRT_BENCH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

struct ZeroOptions {
  bool json = false;
  int layers = 12;
  int width = 1024;
  int steps = 4;
  int passes = 4;  // synthetic compute: passes over a layer's weights in forward (2x backward)
  std::vector<int> stages = {0, 1, 2, 3};
  // host; emulated: the device engine on the emulated device, each stage beside the host
  // engine's; device: the device engine on the GPU (the host touches no parameter or
  // gradient: the synthetic compute and the gradients are left out).
  std::string memory_space = "host";
  // ZeRO-Offload (offload_optimizer = cpu) at stages 1-3; stage 0, which cannot offload,
  // stays the baseline.
  bool offload = false;
  // engine.offload_step of the offloaded device engines: during_backward, after_backward.
  std::string offload_step = "during_backward";
  // zero_optimization.offload_optimizer.ratio: the share of the state on the CPU.
  double offload_ratio = 1;
  // Where the host engine's collective buffers live (engine.shared_buffers): "both" runs
  // every case on private buffers and then on node-shared ones, beside each other.
  std::string buckets = "both";
};

// The program's device work on a GPU: forward and backward stand-ins (device-to-device
// copies, `passes` of a layer's weights forward and twice that backward) on a stream of
// its own that the engine orders with (zrt_engine_set_stream), so that the engine's
// copies have something to hide behind, as behind real kernels.
class GpuWork {
 public:
#if ZRT_BENCH_HAVE_CUDA
  explicit GpuWork(size_t bytes) : bytes_(bytes) {
    if (cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess ||
        cudaMalloc(&a_, bytes) != cudaSuccess || cudaMalloc(&b_, bytes) != cudaSuccess) {
      std::fprintf(stderr, "zrt-bench zero: the GPU stand-in work: %s\n",
                   cudaGetErrorString(cudaGetLastError()));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  ~GpuWork() {
    cudaStreamSynchronize(stream_);
    cudaFree(a_);
    cudaFree(b_);
    cudaStreamDestroy(stream_);
  }
  void *stream() const {
    return stream_;
  }
  void run(int passes) {
    for (int p = 0; p < passes; ++p)
      cudaMemcpyAsync(p % 2 ? a_ : b_, p % 2 ? b_ : a_, bytes_, cudaMemcpyDeviceToDevice, stream_);
  }
  void synchronize() {
    cudaStreamSynchronize(stream_);
  }

 private:
  size_t bytes_;
  cudaStream_t stream_ = nullptr;
  void *a_ = nullptr, *b_ = nullptr;
#else
  explicit GpuWork(size_t) {}
  void *stream() const {
    return nullptr;
  }
  void run(int) {}
  void synchronize() {}
#endif
};

struct CaseResult {
  double seconds = 0;                               // median step time
  double offload_copy = 0, offload_exposed = 0;     // summed over the timed steps
  double offload_cpu = 0, offload_cpu_exposed = 0;  // the CPU step, summed likewise
  // The share of the timed steps' time the program waited on the engine's collectives
  // (the step report's comm_wait_seconds), on the rank that waited most.
  double exposed_comm = 0;
  int64_t shared_bytes = 0;  // of the engine's buffers, in its node-shared window
};

#define ZCHECK(call)                                                                     \
  do {                                                                                   \
    if ((call) != ZRT_SUCCESS) {                                                         \
      std::fprintf(stderr, "zrt-bench zero: %s: %s\n", #call, zrt_last_error_message()); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                      \
    }                                                                                    \
  } while (0)

// Compute that stands in for a layer's matrix products: `passes` multiply-adds per weight.
float synthetic_compute(const float *w, size_t n, int passes) {
  float acc[16] = {0};
  for (int p = 0; p < passes; ++p)
    for (size_t i = 0; i < n; ++i)
      acc[i % 16] += w[i] * 1.0001f;
  float s = 0;
  for (float a : acc)
    s += a;
  return s;
}

CaseResult run_case(zrt_context_h ctx, const ZeroOptions &opt, int stage, bool overlap, bool device,
                    bool host_touches, GpuWork *gpu, bool shared = true) {
  zrt_engine_params_t p = {};
  p.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE | ZRT_ENGINE_PARAM_FIELD_OVERLAP |
                 ZRT_ENGINE_PARAM_FIELD_MEMORY_SPACE | ZRT_ENGINE_PARAM_FIELD_OFFLOAD_OPTIMIZER |
                 ZRT_ENGINE_PARAM_FIELD_SHARED_BUFFERS;
  p.shared_buffers = shared ? 1 : 0;
  p.stage = stage;
  p.overlap = overlap;
  p.memory_space = device ? ZRT_ENGINE_MEMORY_DEVICE : ZRT_ENGINE_MEMORY_HOST;
  // Offload moves a device engine's state (a host engine refuses it).
  p.offload_optimizer = opt.offload && stage > 0 && device;
  const std::string settings = fmt::format(
      R"({{"engine": {{"offload_step": "{}"}}, "zero_optimization": {{"offload_optimizer": )"
      R"({{"ratio": {}}}}}}})",
      opt.offload_step, opt.offload_ratio);
  if (p.offload_optimizer) {
    p.field_mask |= ZRT_ENGINE_PARAM_FIELD_SETTINGS;
    p.settings = settings.c_str();
  }
  zrt_engine_h e = nullptr;
  ZCHECK(zrt_engine_create(ctx, &p, &e));
  if (gpu != nullptr) ZCHECK(zrt_engine_set_stream(e, gpu->stream()));
  const int64_t w_shape[2] = {opt.width, opt.width}, b_shape[1] = {opt.width};
  std::vector<zrt_param_h> W(static_cast<size_t>(opt.layers)), B(static_cast<size_t>(opt.layers));
  for (int l = 0; l < opt.layers; ++l) {
    ZCHECK(zrt_param_register(e, fmt::format("layer{}.weight", l).c_str(), ZRT_DTYPE_FP32, 2,
                              w_shape, &W[static_cast<size_t>(l)]));
    ZCHECK(zrt_param_register(e, fmt::format("layer{}.bias", l).c_str(), ZRT_DTYPE_FP32, 1, b_shape,
                              &B[static_cast<size_t>(l)]));
  }
  ZCHECK(zrt_engine_commit(e));
  zrt_memory_report_t m{};
  m.field_mask = ZRT_MEMORY_REPORT_FIELD_SHARED;
  ZCHECK(zrt_engine_memory(e, &m));
  const int64_t shared_bytes = m.node_shared_bytes;
  std::vector<float> init(static_cast<size_t>(opt.width) * static_cast<size_t>(opt.width), 0.01f);
  for (int l = 0; l < opt.layers; ++l) {
    ZCHECK(zrt_param_set(e, W[static_cast<size_t>(l)], init.data(), ZRT_DTYPE_FP32));
    ZCHECK(zrt_param_set(e, B[static_cast<size_t>(l)], init.data(), ZRT_DTYPE_FP32));
  }
  volatile float sink = 0;
  auto iteration = [&] {
    for (int l = 0; l < opt.layers; ++l) {  // forward
      zrt_param_h h = W[static_cast<size_t>(l)];
      ZCHECK(zrt_param_gather(e, h));
      void *data = nullptr;
      ZCHECK(zrt_param_data(e, h, &data));
      if (host_touches)
        sink = sink + synthetic_compute(static_cast<float *>(data), init.size(), opt.passes);
      if (gpu != nullptr) gpu->run(opt.passes);
      ZCHECK(zrt_param_release(e, h));
    }
    for (int l = opt.layers - 1; l >= 0; --l) {  // backward
      for (zrt_param_h h : {W[static_cast<size_t>(l)], B[static_cast<size_t>(l)]}) {
        ZCHECK(zrt_param_gather(e, h));
        void *data = nullptr, *grad = nullptr;
        ZCHECK(zrt_param_data(e, h, &data));
        size_t n = h == W[static_cast<size_t>(l)] ? init.size() : static_cast<size_t>(opt.width);
        ZCHECK(zrt_param_grad_data(e, h, &grad));
        if (host_touches) {
          sink = sink + synthetic_compute(static_cast<float *>(data), n, 2 * opt.passes);
          float *g = static_cast<float *>(grad);
          for (size_t i = 0; i < n; ++i)
            g[i] += 1e-3f;
        }
        if (gpu != nullptr && n == init.size()) gpu->run(2 * opt.passes);
        ZCHECK(zrt_param_grad_ready(e, h));
        ZCHECK(zrt_param_release(e, h));
      }
    }
    zrt_step_report_t r{};
    r.field_mask = ZRT_STEP_REPORT_FIELD_OFFLOAD_TIMES | ZRT_STEP_REPORT_FIELD_OFFLOAD_CPU |
                   ZRT_STEP_REPORT_FIELD_COMMUNICATION;
    ZCHECK(zrt_engine_step(e, &r));
    if (gpu != nullptr) gpu->synchronize();  // the step ends with the program's work done
    return r;
  };
  iteration();  // warm-up
  std::vector<double> times;
  CaseResult out;
  out.shared_bytes = shared_bytes;
  double waited = 0, stepped = 0;
  for (int s = 0; s < opt.steps; ++s) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    const zrt_step_report_t r = iteration();
    double dt = MPI_Wtime() - t0;
    waited += r.comm_wait_seconds;
    stepped += dt;
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    times.push_back(dt);
    out.offload_copy += r.offload_copy_seconds;
    out.offload_exposed += r.offload_exposed_seconds;
    out.offload_cpu += r.offload_cpu_seconds;
    out.offload_cpu_exposed += r.offload_cpu_exposed_seconds;
  }
  ZCHECK(zrt_engine_destroy(e));
  std::sort(times.begin(), times.end());
  out.seconds = times[times.size() / 2];
  out.exposed_comm = stepped > 0 ? waited / stepped : 0;
  MPI_Allreduce(MPI_IN_PLACE, &out.exposed_comm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  // Rank 0 reports the rank whose copies were least hidden.
  double shares[4] = {out.offload_exposed, out.offload_copy, out.offload_cpu_exposed,
                      out.offload_cpu};
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  struct {
    double share;
    int rank;
  } mine{out.offload_copy > 0 ? out.offload_exposed / out.offload_copy : 0, rank}, worst{};
  MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
  MPI_Bcast(shares, 4, MPI_DOUBLE, worst.rank, MPI_COMM_WORLD);
  out.offload_exposed = shares[0];
  out.offload_copy = shares[1];
  out.offload_cpu_exposed = shares[2];
  out.offload_cpu = shares[3];
  return out;
}

int run_zero(const ZeroOptions &opt) {
  // The emulated device is a configuration of the context (memory.device.emulate).
  if (opt.memory_space == "emulated") setenv("ZRT_MEMORY_DEVICE_EMULATE", "1", 1);
  zrt_context_h ctx = nullptr;
  ZCHECK(zrt_init(MPI_COMM_WORLD, nullptr, &ctx));
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const double params = static_cast<double>(opt.layers) * opt.width * (opt.width + 1);
  const bool device = opt.memory_space != "host", beside_host = opt.memory_space == "emulated";
  const bool host_touches = opt.memory_space != "device";
  const bool offload_times = device && opt.offload;
  // On a GPU the program's work is device work (GpuWork); a build without CUDA has none.
  std::unique_ptr<GpuWork> gpu;
#if ZRT_BENCH_HAVE_CUDA
  if (opt.memory_space == "device") {
    // On the GPU the context chose for this rank (the engine refuses a stream of another).
    size_t len = 0;
    zrt_context_describe(ctx, nullptr, 0, &len);
    std::string text(len + 1, '\0');
    zrt_context_describe(ctx, text.data(), text.size(), &len);
    text.resize(len);
    const nlohmann::json d = nlohmann::json::parse(text, nullptr, false);
    if (d.is_object() && d["memory"]["device"].is_object())
      cudaSetDevice(d["memory"]["device"].value("index", 0));
    gpu = std::make_unique<GpuWork>(static_cast<size_t>(opt.width) * opt.width * sizeof(float));
  }
#endif
  // Private and node-shared buffers only differ for a host engine.
  std::vector<bool> kinds = {true};
  if (!device && opt.buckets == "both") kinds = {false, true};
  if (!device && opt.buckets == "private") kinds = {false};
  if (rank == 0 && !opt.json)
    fmt::print(
        "zrt-bench zero: {} layers of {}x{} fp32 ({:.1f}M parameters), {} ranks, AdamW{}, "
        "engine in {} memory; median step time over {} steps; exposed comm: the share of the "
        "step waiting on the engine's collectives (the rank that waited most); buckets: the "
        "collectives' buffers private or in the node-shared window (engine.shared_buffers)\n"
        "{:>6} {:>8} {:>8} {:>10} {:>12} {:>8} {:>12}{}{}\n",
        opt.layers, opt.width, opt.width, params / 1e6, n,
        opt.offload
            ? fmt::format(" with ZeRO-Offload at stages 1-3 (CPU step {}{})", opt.offload_step,
                          opt.offload_ratio < 1 ? fmt::format(", ratio {}", opt.offload_ratio)
                                                : std::string())
            : std::string(),
        device ? opt.memory_space + " device" : std::string("host"), opt.steps, "stage", "overlap",
        "buckets", "seconds", "vs stage 0", "exposed", "vs private",
        beside_host ? fmt::format(" {:>10} {:>12}", "host s", "vs host") : "",
        offload_times
            ? fmt::format(" {:>12} {:>8} {:>10} {:>8}", "copies s", "hidden", "cpu s", "hidden")
            : "");
  for (bool overlap : {true, false}) {
    std::vector<double> base(2, 0.0);
    for (int stage : opt.stages) {
      double private_seconds = 0;
      for (bool shared : kinds) {
        const CaseResult c =
            run_case(ctx, opt, stage, overlap, device, host_touches, gpu.get(), shared);
        const double t = c.seconds;
        // The orchestration's own cost on the emulated device: the same steps on the host.
        double host =
            beside_host ? run_case(ctx, opt, stage, overlap, false, true, nullptr).seconds : 0;
        // The share of the offload copies that nothing made the host wait for (the least
        // hidden rank's).
        const bool offloaded = offload_times && c.offload_copy > 0;
        const double hidden =
            offloaded ? std::max(0.0, 1.0 - c.offload_exposed / c.offload_copy) : 0;
        // And of the CPU step, the share backward hid.
        const double cpu_hidden = offloaded && c.offload_cpu > 0
                                      ? std::max(0.0, 1.0 - c.offload_cpu_exposed / c.offload_cpu)
                                      : 0;
        // Whether the engine had a window: none with one rank, or on a backend without one.
        const char *where = device ? "device" : c.shared_bytes > 0 ? "shared" : "private";
        double &b = base[shared ? 1 : 0];
        if (stage == 0) b = t;
        const double ratio = b > 0 ? t / b : 0;
        if (!shared) private_seconds = t;
        const double vs_private = shared && private_seconds > 0 ? t / private_seconds : 0;
        if (rank != 0) continue;
        if (opt.json) {
          nlohmann::json j{
              {"bench", "zero"},
              {"case", fmt::format("stage{}_{}_{}", stage, overlap ? "overlap" : "sync",
                                   shared ? "shared" : "private")},
              {"np", n},
              {"stage", stage},
              {"overlap", overlap},
              {"buckets", where},
              {"shared_bytes", c.shared_bytes},
              {"params", params},
              {"memory_space", opt.memory_space},
              {"seconds", t},
              {"exposed_comm_share", c.exposed_comm}};
          if (b > 0) j["ratio_vs_stage0"] = ratio;
          if (vs_private > 0) j["ratio_vs_private"] = vs_private;
          if (beside_host) {
            j["host_seconds"] = host;
            j["ratio_vs_host"] = t / host;
          }
          j["offload"] = opt.offload && stage > 0;
          if (offloaded) {
            j["offload_copy_seconds"] = c.offload_copy;
            j["offload_exposed_seconds"] = c.offload_exposed;
            j["offload_hidden_share"] = hidden;
            j["offload_step"] = opt.offload_step;
            j["offload_ratio"] = opt.offload_ratio;
            j["offload_cpu_seconds"] = c.offload_cpu;
            j["offload_cpu_exposed_seconds"] = c.offload_cpu_exposed;
            j["offload_cpu_hidden_share"] = cpu_hidden;
          }
          fmt::print("{}\n", j.dump());
        } else {
          fmt::print("{:>6} {:>8} {:>8} {:>10.4f} {:>11.3f}x {:>7.1f}% {:>12}{}{}\n", stage,
                     overlap ? "on" : "off", where, t, ratio, 100 * c.exposed_comm,
                     vs_private > 0 ? fmt::format("{:.3f}x", vs_private) : std::string("-"),
                     beside_host ? fmt::format(" {:>10.4f} {:>11.3f}x", host, t / host) : "",
                     offloaded
                         ? fmt::format(" {:>12.4f} {:>7.1f}% {:>10.4f} {:>7.1f}%", c.offload_copy,
                                       100 * hidden, c.offload_cpu, 100 * cpu_hidden)
                         : "");
        }
        std::fflush(stdout);
      }
    }
  }
  zrt_finalize(ctx);
  return 0;
}

}  // namespace

void add_zero_bench(CLI::App &app) {
  auto opt = std::make_shared<ZeroOptions>();
  CLI::App *sub = app.add_subcommand("zero", "step time of ZeRO stages 1-3 against stage 0");
  sub->add_flag("--json", opt->json, "one JSON object per line");
  sub->add_option("--layers", opt->layers, "layers of the synthetic model")->capture_default_str();
  sub->add_option("--width", opt->width, "each layer is width x width")->capture_default_str();
  sub->add_option("--steps", opt->steps, "timed steps per case")->capture_default_str();
  sub->add_option("--passes", opt->passes, "synthetic compute per weight")->capture_default_str();
  sub->add_option("--stages", opt->stages, "stages to run (0 first, for the ratio)")
      ->delimiter(',');
  sub->add_option("--memory-space", opt->memory_space,
                  "host; emulated: the device engine on the emulated device, beside the host "
                  "engine (the orchestration's cost); device: on the GPU, the host touching no "
                  "parameter")
      ->check(CLI::IsMember({"host", "emulated", "device"}))
      ->capture_default_str();
  sub->add_option("--buckets", opt->buckets,
                  "a host engine's collective buffers: private, shared (the node-shared window, "
                  "engine.shared_buffers = auto), or both, each case on private buffers and "
                  "then shared ones")
      ->check(CLI::IsMember({"both", "shared", "private"}))
      ->capture_default_str();
  sub->add_flag("--offload", opt->offload,
                "ZeRO-Offload at stages 1-3 (stage 0 stays the baseline); on the device the "
                "copies' time and the share of it hidden behind backward and the update");
  sub->add_option("--offload-step", opt->offload_step,
                  "with --offload on the device: the CPU step during_backward (hidden behind "
                  "backward, speculatively) or after_backward (engine.offload_step)")
      ->check(CLI::IsMember({"during_backward", "after_backward"}))
      ->capture_default_str();
  sub->add_option("--offload-ratio", opt->offload_ratio,
                  "with --offload on the device: the share of the optimizer state on the CPU, "
                  "the rest updated on the device (zero_optimization.offload_optimizer.ratio)")
      ->capture_default_str();
  sub->callback([opt] {
    int rc = run_zero(*opt);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}
