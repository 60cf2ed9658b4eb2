#include "bench_comm.hpp"

#include <fmt/format.h>
#include <mpi.h>
#include <zerort/zerort.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "alpha_beta.hpp"
#include "timing.hpp"

namespace {

struct CommOptions {
  bool json = false;
  std::string json_file;  // JSON lines also go here, next to the table
  std::string min_bytes = "1K";
  std::string max_bytes = "256M";
  int factor = 4;
  std::vector<std::string> ops = {"reduce_scatter", "all_gather", "all_gather_in_place",
                                  "all_reduce"};
  std::vector<std::string> backends = {"mpi", "shm", "shm+mem", "ucx", "hier"};
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

struct Column {
  std::string name;  // backend asked for, "+mem" when its buffers come from zrt_comm_mem_alloc
  std::string runs;  // backend that serves it (ucx may fall back to mpi)
  zrt_comm_h comm = nullptr;
  char *send = nullptr, *recv = nullptr;  // zrt_comm_mem_alloc's, or the shared vectors'
  bool own_buffers = false;
};

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

  // One communicator per backend asked for; a backend this build or job cannot run is
  // left out with its reason (every rank fails zrt_comm_create together).
  std::vector<Column> columns;
  for (const std::string &b : opt.backends) {
    // "shm+mem": shm on buffers from zrt_comm_mem_alloc, which the node's ranks share.
    const bool mem = b.size() > 4 && b.compare(b.size() - 4, 4, "+mem") == 0;
    const std::string backend = mem ? b.substr(0, b.size() - 4) : b;
    zrt_comm_params_t p = {};
    p.field_mask = ZRT_COMM_PARAM_FIELD_BACKEND;
    p.backend = backend.c_str();
    Column c;
    c.name = b;
    c.own_buffers = mem;
    if (zrt_comm_create(ctx, MPI_COMM_WORLD, &p, &c.comm) != ZRT_SUCCESS) {
      if (rank == 0 && !opt.json)
        fmt::print("backend {}: left out: {}\n", b, zrt_last_error_message());
      continue;
    }
    const char *runs = "?";
    zrt_comm_backend(c.comm, &runs);
    c.runs = mem ? std::string(runs) + "+mem" : runs;
    columns.push_back(c);
  }

  std::FILE *json_out = nullptr;
  if (rank == 0 && !opt.json_file.empty()) {
    json_out = std::fopen(opt.json_file.c_str(), "w");
    if (json_out == nullptr) {
      std::fprintf(stderr, "zrt-bench comm: cannot write %s\n", opt.json_file.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  auto emit = [&](const nlohmann::json &j) {
    if (rank != 0) return;
    if (opt.json) fmt::print("{}\n", j.dump());
    if (json_out != nullptr) fmt::print(json_out, "{}\n", j.dump());
  };

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
  if (dt != ZRT_DTYPE_FP64)  // keep every element a small finite number
    for (size_t i = 0; i + 1 < max_bytes; i += 2)
      send[i + 1] = 0x3c;
  std::memset(recv.data(), 0, recv.size());
  for (Column &c : columns) {
    if (!c.own_buffers) {
      c.send = send.data();
      c.recv = recv.data();
      continue;
    }
    void *ps = nullptr, *pr = nullptr;
    fail_if(zrt_comm_mem_alloc(c.comm, max_bytes, &ps), "zrt_comm_mem_alloc");
    fail_if(zrt_comm_mem_alloc(c.comm, max_bytes, &pr), "zrt_comm_mem_alloc");
    c.send = static_cast<char *>(ps);
    c.recv = static_cast<char *>(pr);
    std::memcpy(c.send, send.data(), max_bytes);
  }

  if (rank == 0 && !opt.json) {
    fmt::print(
        "zrt-bench comm: {} ranks, {}; bus bandwidth in GB/s (reduce-scatter and all-gather "
        "move (n-1)/n of the buffer, all-reduce 2(n-1)/n); memcpy: every rank copying the "
        "buffer at once, the limit of a one-copy collective\n",
        n, opt.dtype);
    std::string head = fmt::format("{:<19} {:>8} | {:>7} {:>7} |", "op", "bytes", "memcpy", "ompi");
    for (const Column &c : columns)
      head += fmt::format(" {:>7}", c.name == c.runs ? c.name : c.name + ">" + c.runs);
    head += fmt::format(" | {:>9} {:>9} |", "best/ompi", "/memcpy");
    // Each backend's share of memcpy too: a backend's own target is a share of it.
    for (const Column &c : columns)
      head += fmt::format(" {:>7}", c.name + "/mc");
    fmt::print("{}\n", head);
  }

  // Samples for the alpha-beta fit: per (op, column), the sizes and median times.
  std::map<std::pair<std::string, std::string>, std::vector<Sample>> samples;

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

    Timing t_copy = time_collective(MPI_COMM_WORLD, opt.timing,
                                    [&] { std::memcpy(recv.data(), send.data(), bytes); });
    double copy_gbs = static_cast<double>(bytes) / t_copy.median / 1e9;
    emit({{"bench", "comm"},
          {"op", "memcpy"},
          {"impl", "memcpy"},
          {"bytes", bytes},
          {"np", n},
          {"seconds", t_copy.median},
          {"gbs", copy_gbs}});

    for (const std::string &op : opt.ops) {
      std::function<void(zrt_comm_h, char *, char *)> ours;
      std::function<void()> theirs;
      double bus_factor = static_cast<double>(n - 1) / n;
      if (op == "reduce_scatter") {
        ours = [&](zrt_comm_h comm, char *sb, char *rb) {
          fail_if(zrt_comm_reduce_scatter(comm, sb, rb, count, dt, ZRT_OP_SUM),
                  "zrt_comm_reduce_scatter");
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
        ours = [&](zrt_comm_h comm, char *sb, char *rb) {
          fail_if(zrt_comm_all_gather(comm, sb + own_offset * es, rb, count, dt),
                  "zrt_comm_all_gather");
        };
        theirs = [&] {
          if (even)
            MPI_Allgather(send.data() + own_offset * es, static_cast<int>(shard), mpi_type,
                          recv.data(), static_cast<int>(shard), mpi_type, MPI_COMM_WORLD);
          else
            MPI_Allgatherv(send.data() + own_offset * es, own_len, mpi_type, recv.data(),
                           counts.data(), displs.data(), mpi_type, MPI_COMM_WORLD);
        };
      } else if (op == "all_gather_in_place") {
        // The ZeRO engine's form (each rank's shard already sits in its place in the
        // output): out of place, a rank copies the whole buffer whatever the algorithm, so
        // its bus bandwidth cannot pass (n-1)/n of memcpy's; in place it copies (n-1)/n.
        ours = [&](zrt_comm_h comm, char *, char *rb) {
          fail_if(zrt_comm_all_gather(comm, rb + own_offset * es, rb, count, dt),
                  "zrt_comm_all_gather");
        };
        theirs = [&] {
          if (even)
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv.data(), static_cast<int>(shard),
                          mpi_type, MPI_COMM_WORLD);
          else
            MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv.data(), counts.data(),
                           displs.data(), mpi_type, MPI_COMM_WORLD);
        };
      } else if (op == "all_reduce") {
        bus_factor *= 2;
        ours = [&](zrt_comm_h comm, char *sb, char *rb) {
          fail_if(zrt_comm_all_reduce(comm, sb, rb, count, dt, ZRT_OP_SUM), "zrt_comm_all_reduce");
        };
        theirs = [&] {
          MPI_Allreduce(send.data(), recv.data(), static_cast<int>(count), mpi_type, MPI_SUM,
                        MPI_COMM_WORLD);
        };
      } else {
        if (rank == 0) std::fprintf(stderr, "zrt-bench comm: unknown op %s\n", op.c_str());
        return 2;
      }
      auto busbw = [&](const Timing &t) {
        return bus_factor * static_cast<double>(bytes) / t.median / 1e9;
      };
      auto row = [&](const char *impl, const std::string &backend, const Timing &t, double ratio) {
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
                         {"busbw_gbs", busbw(t)}};
        if (!backend.empty()) {
          j["backend"] = backend;
          if (has_baseline) j["speedup_vs_mpi"] = ratio;
          j["of_memcpy"] = busbw(t) / copy_gbs;
        }
        emit(j);
      };

      Timing t_mpi{};
      if (has_baseline) {
        t_mpi = time_collective(MPI_COMM_WORLD, opt.timing, theirs);
        row("mpi", "", t_mpi, 0);
        samples[{op, "ompi"}].push_back({static_cast<double>(bytes), t_mpi.median});
      }
      std::string line = fmt::format("{:<19} {:>8} | {:>7.2f} {:>7.3f} |", op, format_bytes(bytes),
                                     copy_gbs, has_baseline ? busbw(t_mpi) : 0.0);
      double best = 0;
      std::string shares;
      for (const Column &c : columns) {
        Timing t =
            time_collective(MPI_COMM_WORLD, opt.timing, [&] { ours(c.comm, c.send, c.recv); });
        row("zerort", c.name, t, has_baseline ? t_mpi.median / t.median : 0);
        samples[{op, c.name}].push_back({static_cast<double>(bytes), t.median});
        line += fmt::format(" {:>7.3f}", busbw(t));
        shares += fmt::format(" {:>6.0f}%", 100 * busbw(t) / copy_gbs);
        best = std::max(best, busbw(t));
      }
      if (rank == 0 && !opt.json) {
        line += fmt::format(" | {:>8.2f}x {:>8.0f}% |{}", has_baseline ? best / busbw(t_mpi) : 0.0,
                            100 * best / copy_gbs, shares);
        fmt::print("{}\n", line);
        std::fflush(stdout);
      }
    }
  }

  // The cost model t = alpha + beta * bytes per backend and op (least squares on relative
  // error, so the small sizes set alpha and the large ones beta).
  if (rank == 0 && !opt.json)
    fmt::print(
        "\nalpha-beta fit, t = alpha + beta * bytes (relative least squares over the sizes "
        "above):\n{:<15} {:<6} {:>10} {:>12} {:>10}\n",
        "op", "impl", "alpha us", "beta ns/B", "1/beta GB/s");
  // A fit that is not sound (one size, a time that falls with size, large residuals) is
  // flagged with its reason, and its latency and bandwidth are null in the JSON: a planner
  // reading the profile refuses it rather than trusting "0.00 GB/s".
  for (const auto &[key, points] : samples) {
    AlphaBeta fit = fit_alpha_beta(points);
    nlohmann::json line{{"bench", "comm_fit"},
                        {"op", key.first},
                        {"impl", key.second == "ompi" ? "mpi" : "zerort"},
                        {"backend", key.second},
                        {"np", n},
                        {"dtype", opt.dtype},
                        {"sizes", points.size()},
                        {"sound", fit.sound},
                        {"max_residual", fit.max_residual},
                        {"alpha_us", nullptr},
                        {"beta_ns_per_byte", nullptr},
                        {"bandwidth_gbs", nullptr}};
    if (fit.sound) {
      line["alpha_us"] = fit.alpha * 1e6;
      line["beta_ns_per_byte"] = fit.beta * 1e9;
      line["bandwidth_gbs"] = 1e-9 / fit.beta;
    } else {
      line["problem"] = fit.problem;
    }
    emit(line);
    if (rank == 0 && !opt.json) {
      if (fit.sound)
        fmt::print("{:<15} {:<6} {:>10.1f} {:>12.4f} {:>10.2f}\n", key.first, key.second,
                   fit.alpha * 1e6, fit.beta * 1e9, 1e-9 / fit.beta);
      else
        fmt::print("{:<15} {:<6} {:>10} {:>12} {:>10}  no fit: {}\n", key.first, key.second, "-",
                   "-", "-", fit.problem);
    }
  }

  if (json_out != nullptr) std::fclose(json_out);
  for (Column &c : columns) {
    if (c.own_buffers) {
      zrt_comm_mem_free(c.comm, c.recv);
      zrt_comm_mem_free(c.comm, c.send);
    }
    zrt_comm_destroy(c.comm);
  }
  zrt_finalize(ctx);
  return 0;
}

}  // namespace

void add_comm_bench(CLI::App &app) {
  auto opt = std::make_shared<CommOptions>();
  CLI::App *sub = app.add_subcommand(
      "comm", "collective bus bandwidth per backend, next to MPI's own and to memcpy");
  sub->add_flag("--json", opt->json, "one JSON object per line instead of the table");
  sub->add_option("--json-file", opt->json_file, "also write the JSON lines to this file");
  sub->add_option("--min-bytes", opt->min_bytes, "smallest buffer (e.g. 1K)")
      ->capture_default_str();
  sub->add_option("--max-bytes", opt->max_bytes, "largest buffer (e.g. 256M)")
      ->capture_default_str();
  sub->add_option("--factor", opt->factor, "size step")->capture_default_str();
  sub->add_option("--ops", opt->ops, "reduce_scatter, all_gather, all_gather_in_place, all_reduce")
      ->delimiter(',');
  sub->add_option("--backends", opt->backends,
                  "zerort backends, one column each (mpi, shm, ucx, hier, nccl; a +mem suffix "
                  "puts the buffers in zrt_comm_mem_alloc's memory, which shm reads in place)")
      ->delimiter(',')
      ->capture_default_str();
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
