// zrt-bench offload: activation offload next to plain memcpy, and how much of the copying
// a forward + backward pass hides behind compute.
//
// Bandwidth: `layers` activations are pushed back to back (waiting for the last) and then
// fetched newest first without prefetch; the rate is compared with memcpy of the same
// buffers into pinned memory on the calling thread, measured in the same run.
//
// Overlap: a pass computes layer by layer (a kernel that runs in L1, so it competes with
// the copies for a core but not for memory bandwidth, like GPU compute next to a copy
// engine) and pushes each activation after its layer in forward; in backward it prefetches
// the next activation into its buffer (zrt_offload_prefetch_into; --staging uses
// zrt_offload_prefetch and staging buffers), computes, and fetches the current one. With
// compute-only time C, copy-only time X and the overlapped time T, the hidden share is 1 - (T - C)
// / X. The engine's own accounting (1 - exposed / copy seconds) is reported beside it.
#include "bench_offload.hpp"

#include <fmt/format.h>
#include <mpi.h>
#include <zerort/zerort.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "timing.hpp"

namespace {

struct OffloadOptions {
  bool json = false;
  std::string json_file;
  std::string bytes = "32M";
  int layers = 8;
  int iterations = 7;
  double compute_ratio = 1.5;
  bool staging = false;  // backward prefetches through staging buffers, not into dst
};

[[noreturn]] void offload_failed(const char *what) {
  std::fprintf(stderr, "zrt-bench offload: %s failed: %s\n", what, zrt_last_error_message());
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

void ok(zrt_status_t st, const char *what) {
  if (st != ZRT_SUCCESS) offload_failed(what);
}

volatile float g_sink = 0;

// FMA over 4 KiB that stays in L1: compute without memory traffic.
void compute(long iterations) {
  static float a[1024] = {1.0f};
  for (long it = 0; it < iterations; ++it)
    for (float &x : a)
      x = x * 0.999f + 0.001f;
  g_sink = a[0];
}

template <class F>
double median_seconds(int iterations, F &&f) {
  f();  // warm-up: first touch, thread start, staging buffers
  std::vector<double> t;
  for (int i = 0; i < iterations; ++i) {
    double t0 = wall_seconds();
    f();
    t.push_back(wall_seconds() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double share(double overlapped, double compute_only, double copy_only) {
  if (copy_only <= 0) return 0;
  return std::clamp(1.0 - (overlapped - compute_only) / copy_only, 0.0, 1.0);
}

int run_offload(const OffloadOptions &opt) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  size_t bytes = 0;
  if (!parse_bytes(opt.bytes, &bytes) || bytes == 0 || opt.layers < 2 || opt.iterations < 1 ||
      opt.compute_ratio <= 0) {
    if (rank == 0)
      std::fprintf(stderr, "zrt-bench offload: bad --bytes, --layers or --iterations\n");
    return 2;
  }
  zrt_context_h ctx = nullptr;
  ok(zrt_init(MPI_COMM_WORLD, nullptr, &ctx), "zrt_init");
  zrt_context_attr_t attr{};
  attr.field_mask = ZRT_CONTEXT_ATTR_FIELD_BINDING;
  zrt_context_query(ctx, &attr);

  const auto L = static_cast<size_t>(opt.layers);
  zrt_offload_params_t params{};
  params.field_mask = ZRT_OFFLOAD_PARAM_FIELD_RING_BYTES;
  params.ring_bytes = L * (bytes + 4096);
  zrt_offload_h off = nullptr;
  ok(zrt_offload_create(ctx, &params, &off), "zrt_offload_create");
  zrt_pool_h host = nullptr, pinned = nullptr;
  ok(zrt_context_pool(ctx, ZRT_MEMORY_HOST, &host), "zrt_context_pool");
  ok(zrt_context_pool(ctx, ZRT_MEMORY_PINNED_HOST, &pinned), "zrt_context_pool");
  std::vector<void *> acts(L);
  for (size_t l = 0; l < L; ++l) {
    ok(zrt_pool_alloc(host, bytes, ZRT_LIFETIME_TRANSIENT, &acts[l]), "zrt_pool_alloc");
    std::memset(acts[l], static_cast<int>(l + 1), bytes);
  }
  void *scratch = nullptr;
  ok(zrt_pool_alloc(pinned, bytes, ZRT_LIFETIME_TRANSIENT, &scratch), "zrt_pool_alloc (pinned)");
  std::memset(scratch, 0, bytes);

  // Baseline: memcpy of every activation to pinned memory and back, on this thread.
  double t_memcpy = median_seconds(opt.iterations, [&] {
    for (size_t l = 0; l < L; ++l)
      std::memcpy(scratch, acts[l], bytes);
    for (size_t l = L; l-- > 0;)
      std::memcpy(acts[l], scratch, bytes);
  });

  std::vector<zrt_offload_token_h> tokens(L);
  auto push_all = [&] {
    for (size_t l = 0; l < L; ++l)
      ok(zrt_offload_push(off, acts[l], bytes, &tokens[l]), "zrt_offload_push");
    ok(zrt_offload_wait(off, tokens[L - 1]), "zrt_offload_wait");
  };
  auto fetch_all = [&] {
    for (size_t l = L; l-- > 0;)
      ok(zrt_offload_fetch(off, tokens[l], acts[l]), "zrt_offload_fetch");
  };
  std::vector<double> pushes, fetches;
  median_seconds(opt.iterations, [&] {
    double t0 = wall_seconds();
    push_all();
    double t1 = wall_seconds();
    fetch_all();
    pushes.push_back(t1 - t0);
    fetches.push_back(wall_seconds() - t1);
  });
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  double t_push = median(pushes), t_fetch = median(fetches);

  // Compute sized against the copy of one activation.
  long iters = 1;
  double per_layer = opt.compute_ratio * (t_push + t_fetch) / (2.0 * static_cast<double>(L));
  for (;;) {
    double t0 = wall_seconds();
    compute(iters);
    if (wall_seconds() - t0 >= per_layer / 8 || iters >= (1L << 40)) break;
    iters *= 2;
  }
  // Scale by the median of several runs: one run on a shared machine can be far off.
  double t_iters = median_seconds(7, [&] { compute(iters); });
  iters = std::max(1L, static_cast<long>(static_cast<double>(iters) * per_layer / t_iters));
  double t_half_compute = median_seconds(opt.iterations, [&] {
    for (size_t l = 0; l < L; ++l)
      compute(iters);
  });

  zrt_offload_stats_t before{}, after{};
  before.field_mask = after.field_mask = ZRT_OFFLOAD_STATS_FIELD_ALL;
  std::vector<double> fwd, bwd;
  zrt_offload_stats(off, &before);
  median_seconds(opt.iterations, [&] {
    double t0 = wall_seconds();
    for (size_t l = 0; l < L; ++l) {
      compute(iters);
      ok(zrt_offload_push(off, acts[l], bytes, &tokens[l]), "zrt_offload_push");
    }
    double t1 = wall_seconds();
    for (size_t l = L; l-- > 0;) {
      if (l > 0) {
        zrt_status_t st = opt.staging ? zrt_offload_prefetch(off, tokens[l - 1])
                                      : zrt_offload_prefetch_into(off, tokens[l - 1], acts[l - 1]);
        ok(st, "zrt_offload_prefetch");
      }
      compute(iters);
      ok(zrt_offload_fetch(off, tokens[l], acts[l]), "zrt_offload_fetch");
    }
    fwd.push_back(t1 - t0);
    bwd.push_back(wall_seconds() - t1);
  });
  zrt_offload_stats(off, &after);
  double t_fwd = median(fwd), t_bwd = median(bwd);

  const double moved = 2.0 * static_cast<double>(L) * static_cast<double>(bytes);
  double memcpy_gbs = moved / t_memcpy / 1e9;
  double offload_gbs = moved / (t_push + t_fetch) / 1e9;
  double hidden = share(t_fwd + t_bwd, 2 * t_half_compute, t_push + t_fetch);
  double copy_s = after.copy_seconds - before.copy_seconds;
  double exposed_s = after.exposed_seconds - before.exposed_seconds;
  double accounted = copy_s > 0 ? std::clamp(1.0 - exposed_s / copy_s, 0.0, 1.0) : 0.0;

  if (rank == 0) {
    nlohmann::json j{{"bench", "offload"},
                     {"engine", after.engine},
                     {"bytes", bytes},
                     {"layers", opt.layers},
                     {"bound_pus", attr.bound_pus},
                     {"prefetch", opt.staging ? "staging" : "into"},
                     {"memcpy_gbs", memcpy_gbs},
                     {"offload_gbs", offload_gbs},
                     {"push_gbs", static_cast<double>(L * bytes) / t_push / 1e9},
                     {"fetch_gbs", static_cast<double>(L * bytes) / t_fetch / 1e9},
                     {"ratio_vs_memcpy", offload_gbs / memcpy_gbs},
                     {"compute_seconds", 2 * t_half_compute},
                     {"copy_seconds", t_push + t_fetch},
                     {"overlapped_seconds", t_fwd + t_bwd},
                     {"hidden_share", hidden},
                     {"hidden_share_forward", share(t_fwd, t_half_compute, t_push)},
                     {"hidden_share_backward", share(t_bwd, t_half_compute, t_fetch)},
                     {"hidden_share_accounted", accounted}};
    if (opt.json) fmt::print("{}\n", j.dump());
    if (!opt.json_file.empty()) {
      std::FILE *f = std::fopen(opt.json_file.c_str(), "w");
      if (f == nullptr) {
        std::fprintf(stderr, "zrt-bench offload: cannot write %s\n", opt.json_file.c_str());
      } else {
        fmt::print(f, "{}\n", j.dump());
        std::fclose(f);
      }
    }
    if (!opt.json) {
      fmt::print(
          "zrt-bench offload: {} activations of {}, engine {}, rank bound to {} PU(s), backward "
          "prefetch {}\n",
          opt.layers, format_bytes(bytes), after.engine, attr.bound_pus,
          opt.staging ? "through staging buffers" : "into the destination");
      fmt::print("  memcpy to pinned and back      {:8.2f} GB/s\n", memcpy_gbs);
      fmt::print(
          "  offload push + fetch           {:8.2f} GB/s  ({:.2f}x memcpy; push {:.2f}, "
          "fetch {:.2f} GB/s)\n",
          offload_gbs, offload_gbs / memcpy_gbs, static_cast<double>(L * bytes) / t_push / 1e9,
          static_cast<double>(L * bytes) / t_fetch / 1e9);
      fmt::print("  compute {:.1f} ms, copies {:.1f} ms, both overlapped {:.1f} ms\n",
                 2e3 * t_half_compute, 1e3 * (t_push + t_fetch), 1e3 * (t_fwd + t_bwd));
      fmt::print(
          "  copy time hidden behind compute: {:.0f}% (forward {:.0f}%, backward {:.0f}%; "
          "engine's accounting {:.0f}%)\n",
          100 * hidden, 100 * share(t_fwd, t_half_compute, t_push),
          100 * share(t_bwd, t_half_compute, t_fetch), 100 * accounted);
      if (attr.bound_pus < 2 && std::string(after.engine) == "thread")
        fmt::print(
            "  note: this rank runs on one processing unit, which the copy thread shares; "
            "give it two or more (mpirun --bind-to none) for copies to overlap\n");
    }
  }
  for (void *a : acts)
    zrt_pool_free(host, a);
  zrt_pool_free(pinned, scratch);
  zrt_offload_destroy(off);
  zrt_finalize(ctx);
  return 0;
}

}  // namespace

void add_offload_bench(CLI::App &app) {
  auto opt = std::make_shared<OffloadOptions>();
  CLI::App *sub = app.add_subcommand(
      "offload", "activation offload bandwidth against memcpy, and copy time hidden by compute");
  sub->add_flag("--json", opt->json, "one JSON object instead of the table");
  sub->add_option("--json-file", opt->json_file, "also write the JSON line to this file");
  sub->add_option("--bytes", opt->bytes, "bytes per activation (e.g. 32M)")->capture_default_str();
  sub->add_option("--layers", opt->layers, "activations per pass")->capture_default_str();
  sub->add_option("--iterations", opt->iterations, "passes per figure (median)")
      ->capture_default_str();
  sub->add_option("--compute-ratio", opt->compute_ratio,
                  "compute time per layer over copy time per activation")
      ->capture_default_str();
  sub->add_flag("--staging", opt->staging,
                "backward uses zrt_offload_prefetch (staging buffers) instead of "
                "zrt_offload_prefetch_into");
  sub->callback([opt] {
    int rc = run_offload(*opt);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}
