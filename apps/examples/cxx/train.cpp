// zerort from C++ (zerort/zerort.hpp), built with find_package(zerort): an engine at
// stage 2 fits a parameter to a target; a bad call comes back as zrt::error.
#include <zerort/zerort.hpp>

#include <cmath>
#include <cstdio>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int result = 0;
  try {
    zrt::context ctx(MPI_COMM_WORLD);
    zrt::comm world = ctx.comm();
    zrt_engine_params_t params{};
    params.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE | ZRT_ENGINE_PARAM_FIELD_LR;
    params.stage = 2;
    params.lr = 0.1;
    zrt::engine engine(ctx.get(), params);
    zrt_param_h w = engine.param_register("w", ZRT_DTYPE_FP32, {3, 4});
    engine.commit();
    std::vector<float> target(12), zeros(12, 0.0f);
    for (int i = 0; i < 12; ++i)
      target[i] = static_cast<float>(i);
    engine.param_set(w, zeros);
    zrt_step_report_t report{};
    for (int step = 0; step < 400; ++step) {
      std::span<float> value = engine.param_data(w), grad = engine.param_grad_data(w);
      for (size_t i = 0; i < value.size(); ++i)
        grad[i] += value[i] - target[i];
      engine.param_grad_ready(w);
      report = engine.step();
    }
    double err = 0;
    for (size_t i = 0; const float v : engine.param_get(w))
      err = std::fmax(err, std::fabs(v - target[i++]));
    try {
      engine.param_register("late", ZRT_DTYPE_FP32, {2});
    } catch (const zrt::error &e) {
      if (world.rank() == 0)
        std::printf("train: caught zrt::error %s (%s)\n", zrt_status_string(e.status()), e.what());
    }
    if (world.rank() == 0)
      std::printf("train: %d ranks, %lld steps, max error %.4f\n", world.size(),
                  static_cast<long long>(report.step), err);
    result = err < 0.05 ? 0 : 1;
  } catch (const zrt::error &e) {
    // Another rank may be waiting in a collective for this one, or be stopped itself:
    // only an abort ends the job on every rank (zerort released what it held without
    // waiting for them).
    std::fprintf(stderr, "train: %s\n", e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return result;
}
