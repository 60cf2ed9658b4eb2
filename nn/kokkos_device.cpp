#include <zerort/nn/kokkos_device.hpp>

#include <fmt/format.h>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace zrt::nn {

#if defined(KOKKOS_ENABLE_CUDA)

namespace {
std::string cuda_version(int v) {
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}
}  // namespace

std::string cuda_unusable() {
  int driver = 0;
  const int runtime = CUDART_VERSION;
  if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0)
    return fmt::format(
        "this build computes on CUDA {} (Kokkos' CUDA backend), but this machine has no CUDA "
        "driver: run it on a GPU node, or use a host build (preset default)",
        cuda_version(runtime));
  if (driver < runtime)
    return fmt::format(
        "this build computes on CUDA {}, but the driver supports CUDA {} only: update the "
        "driver, or build against a CUDA toolkit no newer than {}",
        cuda_version(runtime), cuda_version(driver), cuda_version(driver));
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0)
    return fmt::format("this build computes on CUDA, but no GPU is usable here ({})",
                       err != cudaSuccess ? cudaGetErrorString(err) : "no device");
  return {};
}

int kokkos_device_for(zrt_context_h context) {
  zrt_context_attr_t a{};
  a.field_mask = ZRT_CONTEXT_ATTR_FIELD_DEVICES;
  int count = 0;
  cudaGetDeviceCount(&count);
  if (zrt_context_query(context, &a) == ZRT_SUCCESS && a.gpu >= 0 && a.gpu < count) return a.gpu;
  // Where hwloc did not map the rank to a GPU, zerort's device memory is on device 0
  // (memory/memory_part.cpp): the model must be there too, or the engine refuses its stream.
  return 0;
}

bool device_memory(int64_t &free_bytes, int64_t &total_bytes) {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return false;
  free_bytes = static_cast<int64_t>(free);
  total_bytes = static_cast<int64_t>(total);
  return true;
}

int64_t device_used_bytes() {
  int64_t free = 0, total = 0;
  return device_memory(free, total) ? total - free : -1;
}

std::unique_ptr<Kokkos::ScopeGuard> start_kokkos(zrt_context_h context, int &argc, char **argv) {
  (void)argc;
  (void)argv;  // the options are the program's; Kokkos' settings come from its environment
  return std::make_unique<Kokkos::ScopeGuard>(
      Kokkos::InitializationSettings().set_device_id(kokkos_device_for(context)));
}

void initialize_kokkos(zrt_context_h context) {
  Kokkos::initialize(Kokkos::InitializationSettings().set_device_id(kokkos_device_for(context)));
}

#else

std::string cuda_unusable() {
  return {};
}

int kokkos_device_for(zrt_context_h) {
  return -1;
}

bool device_memory(int64_t &, int64_t &) {
  return false;
}

int64_t device_used_bytes() {
  return -1;
}

std::unique_ptr<Kokkos::ScopeGuard> start_kokkos(zrt_context_h, int &argc, char **argv) {
  return std::make_unique<Kokkos::ScopeGuard>(argc, argv);
}

void initialize_kokkos(zrt_context_h) {
  Kokkos::initialize();
}

#endif

}  // namespace zrt::nn
