// Kokkos for programs that do not start it themselves (C and Fortran programs that only call
// zrt_model_*): started on the first zrt_model_create, on the rank's GPU in a CUDA build,
// and ended at exit, after the program's own exit handlers.
#include <Kokkos_Core.hpp>

#include <cstdlib>
#include <mutex>

#include <zerort/nn/kokkos_device.hpp>

#include "configured_model.hpp"

namespace zrt::nn::model {

void ensure_kokkos(zrt_context_h context) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (Kokkos::is_initialized()) return;
  if (const std::string why = cuda_unusable(); !why.empty()) throw std::runtime_error(why);
  initialize_kokkos(context);
  std::atexit([] {
    if (Kokkos::is_initialized()) Kokkos::finalize();
  });
}

}  // namespace zrt::nn::model
