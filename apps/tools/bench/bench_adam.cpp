#include "bench_adam.hpp"
#include "timing.hpp"

#include <fmt/format.h>
#include <mpi.h>
#include <zerort/zerort.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace {

struct AdamOptions {
  bool json = false;
  double params = 100e6;
  int iters = 5;
};

// The baseline: the textbook AdamW loop, one element at a time (vectorization disabled so it
// is the scalar code a user would write without SIMD).
__attribute__((optimize("no-tree-vectorize"))) void scalar_adamw(float *w, float *m, float *v,
                                                                 const float *g, size_t n, float lr,
                                                                 float beta1, float beta2,
                                                                 float eps, float wd, int step) {
  const float bc1 = 1.0f - std::pow(beta1, static_cast<float>(step));
  const float bc2 = 1.0f - std::pow(beta2, static_cast<float>(step));
  for (size_t i = 0; i < n; ++i) {
    m[i] = beta1 * m[i] + (1 - beta1) * g[i];
    v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
    float mhat = m[i] / bc1, vhat = v[i] / bc2;
    w[i] -= lr * (mhat / (std::sqrt(vhat) + eps) + wd * w[i]);
  }
}

// STREAM-style copy bandwidth (bytes read + written per second) with `threads` threads,
// each copying its own part, best of three.
double copy_bandwidth(float *dst, const float *src, size_t n, int threads) {
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    double t0 = wall_seconds();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([=] {
        size_t b = n * static_cast<size_t>(t) / static_cast<size_t>(threads);
        size_t e = n * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
        std::memcpy(dst + b, src + b, (e - b) * sizeof(float));
      });
    for (auto &p : pool)
      p.join();
    best = std::max(best, 2.0 * static_cast<double>(n) * sizeof(float) / (wall_seconds() - t0));
  }
  return best;
}

// Bandwidth of AdamW's own access pattern with almost no arithmetic: read w, m, v, g and
// write w, m, v in place (28 bytes per element), best of three. This is the memory roofline
// the kernel can approach; memcpy alone understates it on machines where a copy's stores
// first read the destination.
double pattern_bandwidth(float *w, float *m, float *v, const float *g, size_t n, int threads) {
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    double t0 = wall_seconds();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([=] {
        size_t b = n * static_cast<size_t>(t) / static_cast<size_t>(threads);
        size_t e = n * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
        for (size_t i = b; i < e; ++i) {
          w[i] += g[i];
          m[i] += g[i];
          v[i] += g[i];
        }
      });
    for (auto &p : pool)
      p.join();
    best = std::max(best, 28.0 * static_cast<double>(n) / (wall_seconds() - t0));
  }
  return best;
}

int run_adam(const AdamOptions &opt) {
  zrt_context_h ctx = nullptr;
  if (zrt_init(MPI_COMM_WORLD, nullptr, &ctx) != ZRT_SUCCESS) {
    std::fprintf(stderr, "zrt-bench adam: zrt_init: %s\n", zrt_last_error_message());
    return 1;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  zrt_context_attr_t attr = {};
  attr.field_mask = ZRT_CONTEXT_ATTR_FIELD_BINDING | ZRT_CONTEXT_ATTR_FIELD_SIZE;
  zrt_context_query(ctx, &attr);
  const char *isa = "?";
  zrt_optimizer_isa(ctx, &isa);
  const size_t n = static_cast<size_t>(opt.params);
  const int threads = std::max(1, attr.bound_pus);

  std::unique_ptr<float[]> w(new float[n]), m(new float[n]), v(new float[n]), g(new float[n]);
  for (size_t i = 0; i < n; ++i) {
    w[i] = 0.01f * static_cast<float>(i % 101);
    m[i] = v[i] = 0;
    g[i] = 0.001f * static_cast<float>(i % 37) - 0.018f;
  }
  double copy_bw = copy_bandwidth(m.get(), w.get(), n, threads);
  double pattern_bw = pattern_bandwidth(w.get(), m.get(), v.get(), g.get(), n, threads);
  const double roofline_bw = std::max(copy_bw, pattern_bw);
  for (size_t i = 0; i < n; ++i) {
    w[i] = 0.01f * static_cast<float>(i % 101);
    m[i] = v[i] = 0;
  }

  zrt_adam_args_t args = {};
  args.field_mask = ZRT_ADAM_ARG_FIELD_ALL;
  args.lr = 1e-3;
  args.beta1 = 0.9;
  args.beta2 = 0.999;
  args.eps = 1e-8;
  args.weight_decay = 0.01;
  args.decoupled = 1;
  args.step = 1;
  args.grad_scale = 1.0;
  std::vector<double> times;
  for (int it = 0; it <= opt.iters; ++it) {
    args.step = it + 1;
    double t0 = wall_seconds();
    if (zrt_optimizer_adam(ctx, &args, w.get(), m.get(), v.get(), g.get(), ZRT_DTYPE_FP32, n) !=
        ZRT_SUCCESS) {
      std::fprintf(stderr, "zrt-bench adam: %s\n", zrt_last_error_message());
      return 1;
    }
    if (it > 0) times.push_back(wall_seconds() - t0);  // the first call touches the pages
  }
  std::sort(times.begin(), times.end());
  double ours = times[times.size() / 2];

  double t0 = wall_seconds();
  scalar_adamw(w.get(), m.get(), v.get(), g.get(), n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 2);
  double scalar = wall_seconds() - t0;

  const double bytes_per_param = 28;  // read w, m, v, g; write w, m, v
  double gbs = bytes_per_param * static_cast<double>(n) / ours / 1e9;
  double roofline_frac = gbs * 1e9 / roofline_bw;
  double speedup = scalar / ours;
  if (rank == 0) {
    if (opt.json) {
      nlohmann::json j{{"bench", "adam"},
                       {"case", fmt::format("adamw_fp32_{}", n)},
                       {"np", attr.size},
                       {"isa", isa},
                       {"threads", threads},
                       {"params", n},
                       {"seconds", ours},
                       {"params_per_s", static_cast<double>(n) / ours},
                       {"gbs", gbs},
                       {"copy_gbs", copy_bw / 1e9},
                       {"pattern_gbs", pattern_bw / 1e9},
                       {"roofline_gbs", roofline_bw / 1e9},
                       {"roofline_frac", roofline_frac},
                       {"scalar_seconds", scalar},
                       {"speedup_vs_scalar", speedup}};
      fmt::print("{}\n", j.dump());
    } else {
      fmt::print("zrt-bench adam: AdamW on {:.0f}M fp32 parameters, {} kernels, {} thread(s)\n",
                 static_cast<double>(n) / 1e6, isa, threads);
      fmt::print("  zerort        {:8.4f} s  {:7.1f} M params/s  {:6.2f} GB/s (28 B/param)\n", ours,
                 static_cast<double>(n) / ours / 1e6, gbs);
      fmt::print("  scalar loop   {:8.4f} s  {:7.1f} M params/s   -> zerort is {:.1f}x faster\n",
                 scalar, static_cast<double>(n) / scalar / 1e6, speedup);
      fmt::print(
          "  roofline      {:8.2f} GB/s: the better of memcpy ({:.2f}) and AdamW's access "
          "pattern without its arithmetic ({:.2f}), same threads\n"
          "  zerort reaches {:.0f}% of the roofline\n",
          roofline_bw / 1e9, copy_bw / 1e9, pattern_bw / 1e9, 100 * roofline_frac);
    }
  }
  zrt_finalize(ctx);
  return 0;
}

}  // namespace

void add_adam_bench(CLI::App &app) {
  auto opt = std::make_shared<AdamOptions>();
  CLI::App *sub = app.add_subcommand("adam", "AdamW kernel vs a scalar loop and the copy roofline");
  sub->add_flag("--json", opt->json, "one JSON object per line");
  sub->add_option("--params", opt->params, "parameters (e.g. 1e8)")->capture_default_str();
  sub->add_option("--iters", opt->iters, "timed calls")->capture_default_str();
  sub->callback([opt] {
    int rc = run_adam(*opt);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}
