// A tensor's gradient copied out of a LocalParameterStore, for the models' gradient checks.
#pragma once

#include <utility>
#include <vector>

#include <zerort/nn/local_parameter_store.hpp>

namespace zrt::nn::test {

template <class T>
std::vector<T> host_grad(LocalParameterStore<T> &store, int id) {
  const size_t n = static_cast<size_t>(store.tensors()[static_cast<size_t>(id)].numel());
  std::vector<T> out(n);
  auto src =
      Kokkos::subview(store.grads_flat(), std::make_pair(store.offset(id), store.offset(id + 1)));
  Kokkos::deep_copy(Kokkos::View<T *, Kokkos::HostSpace, Unmanaged>(out.data(), n), src);
  return out;
}

}  // namespace zrt::nn::test
