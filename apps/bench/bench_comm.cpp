#include "bench_comm.hpp"

#include <fmt/format.h>
#include <mpi.h>
#include <zerort/zerort.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "timing.hpp"

namespace {

struct CommOptions {
  bool json = false;
  std::string json_file;  // JSON lines also go here, next to the table
  std::string min_bytes = "1K";
  std::string max_bytes = "256M";
  int factor = 4;
  std::vector<std::string> ops = {"reduce_scatter", "all_gather", "all_reduce"};
  std::string dtype = "fp32";
  TimingPolicy timing;
};

zrt_dtype_t parse_dtype(const std::string &name) {
  if (name == "fp64") return ZRT_DTYPE_FP64;
  if (name == "bf16") return ZRT_DTYPE_BF16;
  if (name == "fp16") return ZRT_DTYPE_FP16;
  return ZRT_DTYPE_FP32;
}

void fail_if(zrt_status_t st, const char *what) {
  if (st != ZRT_SUCCESS) {
    std::fprintf(stderr, "zrt-bench comm: %s failed: %s\n", what, zrt_last_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

int run_comm(const CommOptions &opt) {
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  size_t min_bytes = 0, max_bytes = 0;
  if (!parse_bytes(opt.min_bytes, &min_bytes) || !parse_bytes(opt.max_bytes, &max_bytes) ||
      min_bytes == 0 || max_bytes < min_bytes || opt.factor < 2) {
    if (rank == 0) std::fprintf(stderr, "zrt-bench comm: bad --min-bytes/--max-bytes/--factor\n");
    return 2;
  }
  zrt_context_h ctx = nullptr;
  fail_if(zrt_init(MPI_COMM_WORLD, nullptr, &ctx), "zrt_init");
  zrt_comm_h comm = nullptr;
  zrt_context_comm(ctx, &comm);
  const char *backend = "?";
  zrt_comm_backend(comm, &backend);

  std::FILE *json_out = nullptr;
  if (rank == 0 && !opt.json_file.empty()) {
    json_out = std::fopen(opt.json_file.c_str(), "w");
    if (json_out == nullptr) {
      std::fprintf(stderr, "zrt-bench comm: cannot write %s\n", opt.json_file.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }

  zrt_dtype_t dt = parse_dtype(opt.dtype);
  size_t es = 0;
  zrt_dtype_size(dt, &es);
  // fp32 and fp64 are compared with MPI's built-in sum; 16-bit types have no MPI baseline.
  bool has_baseline = dt == ZRT_DTYPE_FP32 || dt == ZRT_DTYPE_FP64;
  MPI_Datatype mpi_type = dt == ZRT_DTYPE_FP64 ? MPI_DOUBLE : MPI_FLOAT;

  // Buffers sized once for the largest case; first-touched here, not in the timed loop.
  std::vector<char> send(max_bytes), recv(max_bytes);
  for (size_t i = 0; i < max_bytes; ++i)
    send[i] = static_cast<char>(i * 7 + rank);
  std::memset(recv.data(), 0, recv.size());

  if (rank == 0 && !opt.json) {
    fmt::print(
        "zrt-bench comm: {} ranks, {}, zerort backend {}; bus bandwidth in GB/s "
        "(reduce-scatter/all-gather move (n-1)/n of the buffer, all-reduce 2(n-1)/n)\n",
        n, opt.dtype, backend);
    fmt::print("{:<15} {:>10} | {:>10} {:>9} | {:>10} {:>9} | {:>8}\n", "op", "bytes", "mpi s",
               "mpi GB/s", "zerort s", "zrt GB/s", "zrt/mpi");
  }

  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= static_cast<size_t>(opt.factor)) {
    size_t count = bytes / es;
    size_t shard = 0;
    zrt_shard_range(count, n, rank, nullptr, nullptr, &shard);
    std::vector<int> counts(static_cast<size_t>(n)), displs(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
      size_t o = 0, l = 0;
      zrt_shard_range(count, n, r, &o, &l, nullptr);
      counts[static_cast<size_t>(r)] = static_cast<int>(l);
      displs[static_cast<size_t>(r)] = static_cast<int>(std::min(o, count));
    }
    bool even = count % static_cast<size_t>(n) == 0;
    size_t own_offset = static_cast<size_t>(displs[static_cast<size_t>(rank)]);
    int own_len = counts[static_cast<size_t>(rank)];

    for (const std::string &op : opt.ops) {
      std::function<void()> ours, theirs;
      double bus_factor = static_cast<double>(n - 1) / n;
      if (op == "reduce_scatter") {
        ours = [&] {
          fail_if(zrt_reduce_scatter(comm, send.data(), recv.data(), count, dt, ZRT_OP_SUM),
                  "zrt_reduce_scatter");
        };
        theirs = [&] {
          if (even)
            MPI_Reduce_scatter_block(send.data(), recv.data(), static_cast<int>(shard), mpi_type,
                                     MPI_SUM, MPI_COMM_WORLD);
          else
            MPI_Reduce_scatter(send.data(), recv.data(), counts.data(), mpi_type, MPI_SUM,
                               MPI_COMM_WORLD);
        };
      } else if (op == "all_gather") {
        ours = [&] {
          fail_if(zrt_all_gather(comm, send.data() + own_offset * es, recv.data(), count, dt),
                  "zrt_all_gather");
        };
        theirs = [&] {
          if (even)
            MPI_Allgather(send.data() + own_offset * es, static_cast<int>(shard), mpi_type,
                          recv.data(), static_cast<int>(shard), mpi_type, MPI_COMM_WORLD);
          else
            MPI_Allgatherv(send.data() + own_offset * es, own_len, mpi_type, recv.data(),
                           counts.data(), displs.data(), mpi_type, MPI_COMM_WORLD);
        };
      } else if (op == "all_reduce") {
        bus_factor *= 2;
        ours = [&] {
          fail_if(zrt_all_reduce(comm, send.data(), recv.data(), count, dt, ZRT_OP_SUM),
                  "zrt_all_reduce");
        };
        theirs = [&] {
          MPI_Allreduce(send.data(), recv.data(), static_cast<int>(count), mpi_type, MPI_SUM,
                        MPI_COMM_WORLD);
        };
      } else {
        if (rank == 0) std::fprintf(stderr, "zrt-bench comm: unknown op %s\n", op.c_str());
        return 2;
      }
      Timing t_mpi{}, t_ours{};
      if (has_baseline) t_mpi = time_collective(MPI_COMM_WORLD, opt.timing, theirs);
      t_ours = time_collective(MPI_COMM_WORLD, opt.timing, ours);
      double bw_mpi =
          has_baseline ? bus_factor * static_cast<double>(bytes) / t_mpi.median / 1e9 : 0;
      double bw_ours = bus_factor * static_cast<double>(bytes) / t_ours.median / 1e9;
      double ratio = has_baseline ? t_mpi.median / t_ours.median : 0;
      if (rank != 0) continue;
      {
        auto row = [&](const char *impl, const Timing &t, double busbw) {
          nlohmann::json j{{"bench", "comm"},
                           {"op", op},
                           {"impl", impl},
                           {"bytes", bytes},
                           {"np", n},
                           {"dtype", opt.dtype},
                           {"seconds", t.median},
                           {"seconds_min", t.min},
                           {"samples", t.samples},
                           {"algbw_gbs", static_cast<double>(bytes) / t.median / 1e9},
                           {"busbw_gbs", busbw}};
          if (std::string(impl) == "zerort") {
            j["backend"] = backend;
            if (has_baseline) j["speedup_vs_mpi"] = ratio;
          }
          if (opt.json) fmt::print("{}\n", j.dump());
          if (json_out != nullptr) fmt::print(json_out, "{}\n", j.dump());
        };
        if (has_baseline) row("mpi", t_mpi, bw_mpi);
        row("zerort", t_ours, bw_ours);
      }
      if (!opt.json) {
        fmt::print("{:<15} {:>10} | {:>10.3g} {:>9.3f} | {:>10.3g} {:>9.3f} | {:>7.2f}x\n", op,
                   format_bytes(bytes), t_mpi.median, bw_mpi, t_ours.median, bw_ours, ratio);
      }
      std::fflush(stdout);
    }
  }
  if (json_out != nullptr) std::fclose(json_out);
  zrt_finalize(ctx);
  return 0;
}

}  // namespace

void add_comm_bench(CLI::App &app) {
  auto opt = std::make_shared<CommOptions>();
  CLI::App *sub = app.add_subcommand("comm", "collective bus bandwidth: zerort next to MPI's own");
  sub->add_flag("--json", opt->json, "one JSON object per line instead of the table");
  sub->add_option("--json-file", opt->json_file, "also write the JSON lines to this file");
  sub->add_option("--min-bytes", opt->min_bytes, "smallest buffer (e.g. 1K)")
      ->capture_default_str();
  sub->add_option("--max-bytes", opt->max_bytes, "largest buffer (e.g. 256M)")
      ->capture_default_str();
  sub->add_option("--factor", opt->factor, "size step")->capture_default_str();
  sub->add_option("--ops", opt->ops, "reduce_scatter, all_gather, all_reduce")->delimiter(',');
  sub->add_option("--dtype", opt->dtype, "fp32, fp64, bf16, fp16")
      ->check(CLI::IsMember({"fp32", "fp64", "bf16", "fp16"}))
      ->capture_default_str();
  sub->add_option("--min-iters", opt->timing.min_iters, "samples at least")->capture_default_str();
  sub->add_option("--max-iters", opt->timing.max_iters, "samples at most")->capture_default_str();
  sub->add_option("--seconds", opt->timing.seconds, "measured time per case")
      ->capture_default_str();
  sub->callback([opt] {
    int rc = run_comm(*opt);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}
