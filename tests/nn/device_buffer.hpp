// A device vector with a host copy, for tests that fill inputs on the host, run kernels,
// and read results back (explicit copies, so the tests also hold for a CUDA build).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include <zerort/nn/tensor.hpp>

namespace zrt::nn::test {

template <class T>
struct DeviceBuffer {
  explicit DeviceBuffer(size_t n, T fill = T(0)) : device("test_buffer", n), host(n, fill) {
    to_device();
  }
  void to_device() {
    Kokkos::deep_copy(
        device, Kokkos::View<const T *, Kokkos::HostSpace, Unmanaged>(host.data(), host.size()));
  }
  std::vector<T> &to_host() {
    Kokkos::deep_copy(Kokkos::View<T *, Kokkos::HostSpace, Unmanaged>(host.data(), host.size()),
                      device);
    return host;
  }
  void randomize(std::mt19937_64 &rng, double scale = 1.0) {
    std::uniform_real_distribution<double> u(-scale, scale);
    for (T &v : host)
      v = static_cast<T>(u(rng));
    to_device();
  }
  Vec<T> vec() { return Vec<T>(device.data(), device.extent(0)); }
  CVec<T> cvec() const { return CVec<T>(device.data(), device.extent(0)); }
  Mat<T> mat(int64_t rows, int64_t cols) { return Mat<T>(device.data(), rows, cols); }
  CMat<T> cmat(int64_t rows, int64_t cols) const { return CMat<T>(device.data(), rows, cols); }
  size_t size() const { return host.size(); }

  Kokkos::View<T *, MemSpace> device;
  std::vector<T> host;
};

/// Token ids on the device.
inline Kokkos::View<int *, MemSpace> device_tokens(const std::vector<int> &ids) {
  Kokkos::View<int *, MemSpace> v("tokens", ids.size());
  Kokkos::deep_copy(
      v, Kokkos::View<const int *, Kokkos::HostSpace, Unmanaged>(ids.data(), ids.size()));
  return v;
}

}  // namespace zrt::nn::test
