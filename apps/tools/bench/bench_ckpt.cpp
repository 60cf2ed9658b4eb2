#include "bench_ckpt.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>
#include <zerort/zerort.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace {

struct CkptOptions {
  bool json = false;
  std::string json_file;  // JSON lines here as well as the table on stdout
  std::string dir = "/tmp";
  int layers = 12;  // GPT-2 124M: 12 layers, 768 channels, 50257 tokens, 1024 positions
  int channels = 768;
  int stage = 2;
  int repeats = 5;
};

#define CCHECK(call)                                                                     \
  do {                                                                                   \
    if ((call) != ZRT_SUCCESS) {                                                         \
      std::fprintf(stderr, "zrt-bench ckpt: %s: %s\n", #call, zrt_last_error_message()); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                      \
    }                                                                                    \
  } while (0)

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
};

// GPT-2's parameter tensors (the LM head is tied to the token embedding).
std::vector<Tensor> gpt2_tensors(int layers, int64_t c) {
  std::vector<Tensor> t = {{"wte", {50257, c}}, {"wpe", {1024, c}}};
  for (int l = 0; l < layers; ++l) {
    auto p = fmt::format("h.{}.", l);
    t.push_back({p + "ln_1.weight", {c}});
    t.push_back({p + "ln_1.bias", {c}});
    t.push_back({p + "attn.c_attn.weight", {c, 3 * c}});
    t.push_back({p + "attn.c_attn.bias", {3 * c}});
    t.push_back({p + "attn.c_proj.weight", {c, c}});
    t.push_back({p + "attn.c_proj.bias", {c}});
    t.push_back({p + "ln_2.weight", {c}});
    t.push_back({p + "ln_2.bias", {c}});
    t.push_back({p + "mlp.c_fc.weight", {c, 4 * c}});
    t.push_back({p + "mlp.c_fc.bias", {4 * c}});
    t.push_back({p + "mlp.c_proj.weight", {4 * c, c}});
    t.push_back({p + "mlp.c_proj.bias", {c}});
  }
  t.push_back({"ln_f.weight", {c}});
  t.push_back({"ln_f.bias", {c}});
  return t;
}

// Drops the file's pages from the page cache (they are clean: the writer synced them), so
// that the next read comes from storage: the figure the page cache does not flatter.
void drop_cached(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

double slowest(double seconds) {
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return seconds;
}

[[noreturn]] void posix_failed(const char *what, const std::string &path) {
  std::fprintf(stderr, "zrt-bench ckpt: %s %s: %s\n", what, path.c_str(), std::strerror(errno));
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

// The save's baseline: every rank pwrite()s its contiguous share of `bytes` into one file,
// then rank 0 fsyncs it. Returns the slowest rank's seconds.
double posix_write(const std::string &path, size_t bytes) {
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const size_t share = (bytes + static_cast<size_t>(n) - 1) / static_cast<size_t>(n);
  const size_t begin = std::min(bytes, share * static_cast<size_t>(rank));
  const size_t count = std::min(bytes, begin + share) - begin;
  std::vector<char> buf(count, static_cast<char>(rank + 1));
  if (rank == 0) std::filesystem::remove(path);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  if (fd < 0) posix_failed("open", path);
  for (size_t done = 0; done < count;) {
    ssize_t w = ::pwrite(fd, buf.data() + done, count - done, static_cast<off_t>(begin + done));
    if (w <= 0) posix_failed("pwrite", path);
    done += static_cast<size_t>(w);
  }
  ::close(fd);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0 || ::fsync(fd) != 0) posix_failed("fsync", path);
    ::close(fd);
  }
  const double seconds = slowest(MPI_Wtime() - t0);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::filesystem::remove(path);
  return seconds;
}

// The load's baseline: the same bytes of the same checkpoint file from the same ranks, with
// pread into memory already touched: the whole file on every rank at stage 0 (each reads
// everything), else each rank an even contiguous share. cold: after dropping the file's
// pages. Returns the slowest rank's seconds.
double posix_read(const std::string &path, bool whole, bool cold) {
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const size_t bytes = std::filesystem::file_size(path);
  const size_t share =
      whole ? bytes : (bytes + static_cast<size_t>(n) - 1) / static_cast<size_t>(n);
  const size_t begin = whole ? 0 : std::min(bytes, share * static_cast<size_t>(rank));
  const size_t count = std::min(bytes, begin + share) - begin;
  std::vector<char> buf(count, 1);
  if (cold) drop_cached(path);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) posix_failed("open", path);
  for (size_t done = 0; done < count;) {
    ssize_t r = ::pread(fd, buf.data() + done, count - done, static_cast<off_t>(begin + done));
    if (r <= 0) posix_failed("pread", path);
    done += static_cast<size_t>(r);
  }
  ::close(fd);
  return slowest(MPI_Wtime() - t0);
}

int run_ckpt(const CkptOptions &opt) {
  zrt_context_h ctx = nullptr;
  CCHECK(zrt_init(MPI_COMM_WORLD, nullptr, &ctx));
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);

  zrt_engine_params_t p = {};
  p.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE;
  p.stage = opt.stage;
  zrt_engine_h e = nullptr;
  CCHECK(zrt_engine_create(ctx, &p, &e));
  const auto tensors = gpt2_tensors(opt.layers, opt.channels);
  std::vector<zrt_param_h> handles;
  size_t numel_total = 0;
  for (const Tensor &t : tensors) {
    zrt_param_h h = nullptr;
    CCHECK(zrt_param_register(e, t.name.c_str(), ZRT_DTYPE_FP32, static_cast<int>(t.shape.size()),
                              t.shape.data(), &h));
    handles.push_back(h);
    size_t numel = 1;
    for (int64_t d : t.shape)
      numel *= static_cast<size_t>(d);
    numel_total += numel;
  }
  CCHECK(zrt_engine_commit(e));
  // A step with made-up gradients (the engine's part of a training step: reductions and
  // AdamW), timed. The first makes AdamW's two state tensors, which are saved.
  auto step = [&] {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (size_t i = handles.size(); i-- > 0;) {
      void *grad = nullptr;
      CCHECK(zrt_param_gather(e, handles[i]));
      CCHECK(zrt_param_grad_data(e, handles[i], &grad));
      zrt_param_info_t info{};
      info.field_mask = ZRT_PARAM_INFO_FIELD_ALL;
      CCHECK(zrt_param_info(e, handles[i], &info));
      std::fill_n(static_cast<float *>(grad), info.numel, 1e-3f);
      CCHECK(zrt_param_grad_ready(e, handles[i]));
      CCHECK(zrt_param_release(e, handles[i]));
    }
    CCHECK(zrt_engine_step(e, nullptr));
    return slowest(MPI_Wtime() - t0);
  };
  step();

  const size_t bytes = numel_total * 3 * sizeof(float);  // parameters, exp_avg, exp_avg_sq
  const std::string path = fmt::format("{}/zrt_bench_ckpt_{}.h5", opt.dir, n);
  const std::string raw = fmt::format("{}/zrt_bench_ckpt_{}.raw", opt.dir, n);
  if (rank == 0 && !opt.json)
    fmt::print(
        "zrt-bench ckpt: GPT-2 shapes, {} layers x {} channels ({:.1f}M parameters), AdamW, "
        "stage {}, {} ranks: {:.0f} MB per checkpoint in {}; best of {}\n"
        "{:>6} {:>10} {:>10} {:>12} {:>10} {:>10}\n",
        opt.layers, opt.channels, static_cast<double>(numel_total) / 1e6, opt.stage, n,
        static_cast<double>(bytes) / 1e6, opt.dir, opt.repeats, "op", "seconds", "MB/s",
        "POSIX MB/s", "POSIX s", "vs POSIX");
  double save = 1e30, load = 1e30, cold = 1e30, pw = 1e30, pr = 1e30, pcold = 1e30;
  double async_block = 1e30, plain_step = 0, overlapped_step = 0;
  int plain_steps = 0, overlapped_steps = 0;
  // Each repeat's overlapped step against its own steps alone just before: the median of
  // these is the figure, as this VM's step time drifts by tens of percent between runs.
  std::vector<double> overlap_ratios;
  for (int r = 0; r < opt.repeats; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    CCHECK(zrt_checkpoint_save(e, path.c_str(), nullptr));
    save = std::min(save, slowest(MPI_Wtime() - t0));
    // From storage first (a save writes around the page cache), then again from the cache;
    // each beside pread of the same bytes in the same state.
    const bool whole = opt.stage == 0;
    pcold = std::min(pcold, posix_read(path, whole, true));
    drop_cached(path);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    CCHECK(zrt_checkpoint_load(e, path.c_str()));
    cold = std::min(cold, slowest(MPI_Wtime() - t0));
    // From the page cache: read through it first (a load from storage reads around it).
    posix_read(path, whole, false);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    CCHECK(zrt_checkpoint_load(e, path.c_str()));
    load = std::min(load, slowest(MPI_Wtime() - t0));
    pr = std::min(pr, posix_read(path, whole, false));
    pw = std::min(pw, posix_write(raw, bytes));
    // Steps alone, then an asynchronous save and the steps that overlap its writing.
    double alone = 0, overlapped = 0;
    int overlapping = 0;
    for (int i = 0; i < 3; ++i)
      alone += step();
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    zrt_request_h request = nullptr;
    CCHECK(zrt_checkpoint_save_post(e, path.c_str(), nullptr, &request));
    async_block = std::min(async_block, slowest(MPI_Wtime() - t0));
    for (bool done = false; !done; ++overlapping) {
      overlapped += step();
      const zrt_status_t tested = zrt_request_test(request);
      if (tested != ZRT_IN_PROGRESS) CCHECK(tested);
      done = tested == ZRT_SUCCESS;
    }
    CCHECK(zrt_request_free(request));
    overlap_ratios.push_back((overlapped / overlapping) / (alone / 3));
    plain_step += alone;
    plain_steps += 3;
    overlapped_step += overlapped;
    overlapped_steps += overlapping;
  }
  plain_step /= plain_steps;
  overlapped_step /= overlapped_steps;
  std::sort(overlap_ratios.begin(), overlap_ratios.end());
  const size_t mid = overlap_ratios.size() / 2;
  const double overlap_ratio = overlap_ratios.size() % 2
                                   ? overlap_ratios[mid]
                                   : (overlap_ratios[mid - 1] + overlap_ratios[mid]) / 2;
  if (rank == 0) {
    std::filesystem::remove(path);
    const double mb = static_cast<double>(bytes) / 1e6;
    std::FILE *jf = opt.json_file.empty() ? nullptr : std::fopen(opt.json_file.c_str(), "w");
    for (auto [op, t, base] : {std::tuple{"save", save, pw}, std::tuple{"load", load, pr},
                               std::tuple{"load_cold", cold, pcold}}) {
      nlohmann::json j{{"bench", "ckpt"},
                       {"case", op},
                       {"np", n},
                       {"stage", opt.stage},
                       {"bytes", bytes},
                       {"seconds", t},
                       {"mb_per_s", mb / t},
                       {"posix_seconds", base},
                       {"posix_mb_per_s", mb / base},
                       {"ratio_vs_posix", base / t}};
      if (jf) fmt::print(jf, "{}\n", j.dump());
      if (opt.json) {
        fmt::print("{}\n", j.dump());
      } else {
        fmt::print("{:>6} {:>10.3f} {:>10.0f} {:>12.0f} {:>10.3f} {:>9.2f}x\n", op, t, mb / t,
                   mb / base, base, base / t);
      }
    }
    nlohmann::json a{{"bench", "ckpt"},
                     {"case", "async"},
                     {"np", n},
                     {"stage", opt.stage},
                     {"bytes", bytes},
                     {"save_seconds", save},
                     {"async_blocking_seconds", async_block},
                     {"blocking_vs_save", async_block / save},
                     {"step_seconds", plain_step},
                     {"overlapped_step_seconds", overlapped_step},
                     {"overlapped_steps", overlapped_steps},
                     {"overlapped_vs_step", overlap_ratio},
                     {"overlapped_vs_step_each", overlap_ratios}};
    if (jf) fmt::print(jf, "{}\n", a.dump());
    if (opt.json)
      fmt::print("{}\n", a.dump());
    else
      fmt::print(
          "async: the call blocks {:.3f} s ({:.1f}% of the save); a step takes {:.3f} s alone "
          "and {:.3f} s while the save writes ({} steps overlapped it; median of the "
          "repeats' ratios {:.2f}x)\n"
          "load_cold: after posix_fadvise(DONTNEED) of the file, for both; save: every rank writes "
          "its "
          "share with pwrite and rank 0 fsyncs the file (POSIX) / each rank fsyncs (zerort)\n",
          async_block, 100 * async_block / save, plain_step, overlapped_step,
          overlapped_steps / opt.repeats, overlap_ratio);
    if (jf) std::fclose(jf);
    std::fflush(stdout);
  }
  CCHECK(zrt_engine_destroy(e));
  zrt_finalize(ctx);
  return 0;
}

}  // namespace

void add_ckpt_bench(CLI::App &app) {
  auto opt = std::make_shared<CkptOptions>();
  CLI::App *sub = app.add_subcommand("ckpt", "checkpoint save/load MB/s against POSIX write/read");
  sub->add_flag("--json", opt->json, "one JSON object per line");
  sub->add_option("--json-file", opt->json_file, "also write JSON lines to this file");
  sub->add_option("--dir", opt->dir, "where the files go")->capture_default_str();
  sub->add_option("--layers", opt->layers, "transformer layers")->capture_default_str();
  sub->add_option("--channels", opt->channels, "model width")->capture_default_str();
  sub->add_option("--stage", opt->stage, "ZeRO stage of the engine")->capture_default_str();
  sub->add_option("--repeats", opt->repeats, "runs of each; the best is reported")
      ->capture_default_str();
  sub->callback([opt] {
    int rc = run_ckpt(*opt);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}
