// zrt-model: a configured model (zerort/model.h) trained and run from the command line, on
// the C API alone: what the tests and the benchmark drive, and a quick look at a
// configuration file.
//
//   zrt-model describe CONFIG
//   mpirun -np 2 zrt-model train CONFIG --input X.f32 --target Y.f32 --batch 64 --steps 100
//        [--load CKPT] [--save CKPT] [--export-initial W.safetensors] [--export W.safetensors]
//        [--onnx M.onnx] [--predict OUT.f32] [--losses]
//   zrt-model predict CONFIG --load CKPT --input X.f32 --predict OUT.f32
//
// Data files are raw little-endian float32, samples one after another (numpy's
// arr.astype("<f4").tofile()). Each step takes the next --batch samples of the file
// (cycling), split among the ranks in rank order: rank r trains on its own contiguous part.
#include <fmt/format.h>
#include <mpi.h>
#include <zerort/model.h>
#include <zerort/zerort.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

void check(zrt_status_t rc) {
  if (rc != ZRT_SUCCESS) throw std::runtime_error(zrt_last_error_message());
}

std::vector<float> read_floats(const std::string &path, int64_t per_sample, const char *what) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error(fmt::format("{} {}: cannot be opened", what, path));
  const int64_t bytes = in.tellg();
  if (bytes % (per_sample * 4) != 0 || bytes == 0)
    throw std::runtime_error(
        fmt::format("{} {}: {} bytes is not a whole number of samples of {} floats", what, path,
                    bytes, per_sample));
  std::vector<float> v(static_cast<size_t>(bytes / 4));
  in.seekg(0);
  in.read(reinterpret_cast<char *>(v.data()), bytes);
  return v;
}

int64_t per_sample(const int64_t *shape, int ndim) {
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d)
    n *= shape[d];
  return n;
}

zrt_tensor_t tensor(float *data, int64_t batch, const int64_t *shape, int ndim) {
  zrt_tensor_t t{};
  t.data = data;
  t.dtype = ZRT_DTYPE_FP32;
  t.ndim = ndim + 1;
  t.shape[0] = batch;
  for (int d = 0; d < ndim; ++d)
    t.shape[d + 1] = shape[d];
  return t;
}

struct Options {
  std::string command, config, input, target, load, save, export_initial, export_final, onnx,
      predict;
  int64_t batch = 32, steps = 0;
  bool losses = false;
};

int run(const Options &o, zrt_context_h ctx, int rank, int ranks) {
  zrt_model_h model = nullptr;
  check(zrt_model_create(ctx, o.config.c_str(), &model));
  zrt_model_info_t info{};
  check(zrt_model_query(model, &info));
  if (o.command == "describe") {
    size_t length = 0;
    check(zrt_model_describe(model, nullptr, 0, &length));
    std::string text(length + 1, '\0');
    check(zrt_model_describe(model, text.data(), text.size(), nullptr));
    if (rank == 0) std::printf("%s", text.c_str());
    return zrt_model_destroy(model) == ZRT_SUCCESS ? 0 : 1;
  }
  if (!o.export_initial.empty())
    check(zrt_model_export(model, o.export_initial.c_str(), ZRT_MODEL_FORMAT_SAFETENSORS));
  if (!o.load.empty()) check(zrt_model_load(model, o.load.c_str()));
  const int64_t in_n = per_sample(info.input_shape, info.input_ndim);
  const int64_t out_n = per_sample(info.output_shape, info.output_ndim);
  if (o.command == "train") {
    if (o.input.empty() || o.target.empty())
      throw std::runtime_error("train needs --input and --target");
    if (o.batch % ranks != 0)
      throw std::runtime_error(
          fmt::format("--batch {} does not divide among {} ranks", o.batch, ranks));
    std::vector<float> x = read_floats(o.input, in_n, "--input");
    const int64_t samples = static_cast<int64_t>(x.size()) / in_n;
    // A target per sample: the output's shape, or its class indices (one fewer dimension).
    std::vector<float> y = read_floats(o.target, 1, "--target");
    const int64_t target_n = static_cast<int64_t>(y.size()) / samples;
    const int64_t classes_n = out_n / info.output_shape[info.output_ndim - 1];
    if (target_n * samples != static_cast<int64_t>(y.size()) ||
        (target_n != out_n && target_n != classes_n))
      throw std::runtime_error(
          fmt::format("--target {}: {} floats for the {} samples of --input: expected {} a sample "
                      "(the output) or {} (class indices)",
                      o.target, y.size(), samples, out_n, classes_n));
    const int target_ndim = target_n == out_n ? info.output_ndim : info.output_ndim - 1;
    const int64_t local = o.batch / ranks;
    std::vector<float> xb(static_cast<size_t>(local * in_n)),
        yb(static_cast<size_t>(local * target_n));
    const auto start = std::chrono::steady_clock::now();
    for (int64_t step = 0; step < o.steps; ++step) {
      for (int64_t i = 0; i < local; ++i) {
        const int64_t s = (step * o.batch + rank * local + i) % samples;
        std::copy_n(x.begin() + s * in_n, in_n, xb.begin() + i * in_n);
        std::copy_n(y.begin() + s * target_n, target_n, yb.begin() + i * target_n);
      }
      zrt_tensor_t in = tensor(xb.data(), local, info.input_shape, info.input_ndim);
      zrt_tensor_t tg = tensor(yb.data(), local, info.output_shape, target_ndim);
      double loss = 0;
      check(zrt_model_train_step(model, &in, &tg, &loss));
      if (o.losses && rank == 0)
        std::printf("step %lld loss %.9e\n", static_cast<long long>(step + 1), loss);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    check(zrt_model_query(model, &info));
    if (rank == 0)
      std::printf(
          "trained %lld steps (%lld optimizer steps) in %.3f s: %.2f steps/s, last loss %.6g\n",
          static_cast<long long>(o.steps), static_cast<long long>(info.optimizer_steps), seconds,
          o.steps / seconds, info.last_loss);
  }
  if (!o.save.empty()) check(zrt_model_save(model, o.save.c_str()));
  if (!o.export_final.empty())
    check(zrt_model_export(model, o.export_final.c_str(), ZRT_MODEL_FORMAT_SAFETENSORS));
  if (!o.onnx.empty()) check(zrt_model_export(model, o.onnx.c_str(), ZRT_MODEL_FORMAT_ONNX));
  if (!o.predict.empty()) {
    if (o.input.empty()) throw std::runtime_error("--predict needs --input");
    std::vector<float> x = read_floats(o.input, in_n, "--input");
    const int64_t samples = static_cast<int64_t>(x.size()) / in_n;
    std::vector<float> out(static_cast<size_t>(samples * out_n));
    zrt_tensor_t in = tensor(x.data(), samples, info.input_shape, info.input_ndim);
    zrt_tensor_t y = tensor(out.data(), samples, info.output_shape, info.output_ndim);
    check(zrt_model_forward(model, &in, &y));
    if (rank == 0) {
      std::ofstream f(o.predict, std::ios::binary);
      f.write(reinterpret_cast<const char *>(out.data()),
              static_cast<std::streamsize>(out.size() * 4));
      if (!f) throw std::runtime_error(fmt::format("--predict {}: writing failed", o.predict));
    }
  }
  check(zrt_model_destroy(model));
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"zrt-model: train and run a model from a configuration file (zerort/model.h)"};
  app.require_subcommand(1);
  Options o;
  for (const char *name : {"describe", "train", "predict"}) {
    CLI::App *sub = app.add_subcommand(name);
    sub->add_option("config", o.config, "the model's configuration (.json, .yaml)")->required();
    if (std::string(name) == "describe") continue;
    sub->add_option("--input", o.input, "inputs, raw float32");
    sub->add_option("--load", o.load, "a checkpoint of zrt_model_save to start from");
    sub->add_option("--predict", o.predict, "write the model's outputs for --input here");
    sub->add_option("--onnx", o.onnx, "export ONNX here");
    sub->add_option("--export", o.export_final, "export safetensors here");
    if (std::string(name) == "predict") continue;
    sub->add_option("--target", o.target, "targets, raw float32");
    sub->add_option("--batch", o.batch, "samples per step, over all ranks")
        ->check(CLI::PositiveNumber);
    sub->add_option("--steps", o.steps, "training steps")->check(CLI::NonNegativeNumber);
    sub->add_option("--save", o.save, "save a checkpoint here");
    sub->add_option("--export-initial", o.export_initial,
                    "export the initial parameters (safetensors)");
    sub->add_flag("--losses", o.losses, "print each step's loss");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }
  o.command = app.get_subcommands().front()->get_name();
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1, rc = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  zrt_context_h ctx = nullptr;
  if (const zrt_status_t st = zrt_init(MPI_COMM_WORLD, nullptr, &ctx); st != ZRT_SUCCESS) {
    std::fprintf(stderr, "zrt-model: %s\n", zrt_last_error_message());
    // A rank that never came (dead before zrt_init): MPI_Finalize would wait for it.
    if (st == ZRT_ERR_TIMEOUT) MPI_Abort(MPI_COMM_WORLD, 1);
  } else {
    try {
      rc = run(o, ctx, rank, ranks);
    } catch (const std::exception &e) {
      // zerort's agreed messages name the rank already ("rank 1: ...").
      if (std::string(e.what()).rfind("rank ", 0) == 0)
        std::fprintf(stderr, "zrt-model: %s\n", e.what());
      else
        std::fprintf(stderr, "zrt-model: rank %d: %s\n", rank, e.what());
      rc = 1;
    }
    zrt_finalize(ctx);
  }
  MPI_Finalize();
  return rc;
}
