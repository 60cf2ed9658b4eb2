// A rank killed during a save leaves the previous checkpoint intact and loadable.
//   checkpoint_crash save PATH    train, save PATH, write the expected values to PATH.expected
//   checkpoint_crash crash PATH   train on, start saving PATH again; rank 1 dies mid-save
//   checkpoint_crash check PATH   load PATH and compare with PATH.expected
//   checkpoint_crash async PATH MS   train on, save PATH in the background, train on; rank 1
//                                  dies MS milliseconds after the save started
//   checkpoint_crash check-any PATH  load PATH: the previous checkpoint (as PATH.expected),
//                                  or the background save's, complete (its checksums hold)
#include <mpi.h>
#include <unistd.h>
#include <zerort/zerort.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

int fail(const char *what) {
  std::fprintf(stderr, "checkpoint_crash: %s: %s\n", what, zrt_last_error_message());
  return 1;
}

const int64_t kShape[2] = {1024, 2048};  // 2M parameters: a save takes a moment
const size_t kNumel = 1024 * 2048;

}  // namespace

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) return 2;
  std::string mode = argv[1], path = argv[2];
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  zrt_context_h ctx;
  zrt_engine_h e;
  zrt_param_h w;
  zrt_engine_params_t p = {};
  p.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE;
  p.stage = 2;
  if (zrt_init(MPI_COMM_WORLD, nullptr, &ctx) || zrt_engine_create(ctx, &p, &e) ||
      zrt_param_register(e, "w", ZRT_DTYPE_FP32, 2, kShape, &w) || zrt_engine_commit(e))
    return fail("setup");
  std::vector<float> values(kNumel);
  for (size_t i = 0; i < kNumel; ++i)
    values[i] = static_cast<float>(i % 977) * 1e-3f;
  if (zrt_param_set(e, w, values.data(), ZRT_DTYPE_FP32)) return fail("zrt_param_set");
  auto train = [&](int steps) {
    for (int s = 0; s < steps; ++s) {
      float *g = nullptr;
      zrt_param_grad_data(e, w, reinterpret_cast<void **>(&g));
      for (size_t i = 0; i < kNumel; i += 7)
        g[i] += 1.0f;
      zrt_param_grad_ready(e, w);
      if (zrt_engine_step(e, nullptr)) return false;
    }
    return true;
  };

  int rc = 0;
  if (mode == "save") {
    if (!train(2) || zrt_checkpoint_save(e, path.c_str(), nullptr)) return fail("save");
    if (zrt_param_get(e, w, values.data(), ZRT_DTYPE_FP32)) return fail("zrt_param_get");
    if (rank == 0)
      std::ofstream(path + ".expected", std::ios::binary)
          .write(reinterpret_cast<char *>(values.data()), static_cast<std::streamsize>(kNumel * 4));
  } else if (mode == "crash") {
    if (!train(3)) return fail("train");
    if (rank == 1) {
      std::thread([tmp = path + ".tmp"] {
        while (access(tmp.c_str(), F_OK) != 0)
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        std::fprintf(stderr, "checkpoint_crash: rank 1 dies during the save\n");
        _exit(7);
      }).detach();
    }
    zrt_checkpoint_save(e, path.c_str(), nullptr);
    std::fprintf(stderr, "checkpoint_crash: the save finished before rank 1 died\n");
    rc = 3;
  } else if (mode == "async") {
    if (!train(3)) return fail("train");
    const int ms = argc == 4 ? std::atoi(argv[3]) : 0;
    if (rank == 1)
      std::thread([ms] {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        std::fprintf(stderr, "checkpoint_crash: rank 1 dies %d ms into the background save\n", ms);
        _exit(7);
      }).detach();
    zrt_request_h request = nullptr;
    if (zrt_checkpoint_save_post(e, path.c_str(), nullptr, &request)) return fail("save_post");
    train(1000);  // until killed
    zrt_request_wait(request);
    rc = 3;
  } else if (mode == "check-any") {
    if (zrt_checkpoint_load(e, path.c_str())) return fail("load");
    std::vector<char> text(1 << 20);
    size_t length = 0;
    zrt_checkpoint_describe(path.c_str(), text.data(), text.size(), &length);
    const bool previous = std::strstr(text.data(), "\"step\":2,") != nullptr;
    std::vector<float> expected(kNumel);
    std::ifstream(path + ".expected", std::ios::binary)
        .read(reinterpret_cast<char *>(expected.data()), static_cast<std::streamsize>(kNumel * 4));
    if (zrt_param_get(e, w, values.data(), ZRT_DTYPE_FP32)) return fail("zrt_param_get");
    if (previous && std::memcmp(values.data(), expected.data(), kNumel * 4) != 0) {
      std::fprintf(stderr, "checkpoint_crash: the previous checkpoint changed\n");
      rc = 4;
    } else if (rank == 0) {
      std::printf("checkpoint_crash: %s loads\n",
                  previous ? "the previous checkpoint" : "the background save, complete,");
    }
  } else if (mode == "check") {
    if (zrt_checkpoint_load(e, path.c_str())) return fail("load");
    std::vector<float> expected(kNumel);
    std::ifstream(path + ".expected", std::ios::binary)
        .read(reinterpret_cast<char *>(expected.data()), static_cast<std::streamsize>(kNumel * 4));
    if (zrt_param_get(e, w, values.data(), ZRT_DTYPE_FP32)) return fail("zrt_param_get");
    if (std::memcmp(values.data(), expected.data(), kNumel * 4) != 0) {
      std::fprintf(stderr, "checkpoint_crash: the checkpoint changed\n");
      rc = 4;
    } else if (rank == 0) {
      std::printf("checkpoint_crash: the previous checkpoint survived and loads\n");
    }
  }
  zrt_engine_destroy(e);
  zrt_finalize(ctx);
  MPI_Finalize();
  return rc;
}
