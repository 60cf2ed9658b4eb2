// A model's view of its ParameterStore: the check that the store holds the model's layout,
// and a tensor's values as the vector or matrix the layers take.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "parameter_store.hpp"
#include "tensor.hpp"

namespace zrt::nn {

/// Throws std::invalid_argument unless @p store holds exactly @p want (names and shapes,
/// in order): a model built over another model's store.
template <class T>
void check_layout(const ParameterStore<T> &store, const std::vector<TensorSpec> &want,
                  const std::string &config_name) {
  const std::vector<TensorSpec> &have = store.tensors();
  bool same = want.size() == have.size();
  for (size_t i = 0; same && i < want.size(); ++i)
    same = want[i].name == have[i].name && want[i].shape == have[i].shape;
  if (!same)
    throw std::invalid_argument("the parameter store does not hold the layout of model config " +
                                config_name);
}

/// Tensor @p id's values as a vector of all its elements (between gather and release).
template <class T>
CVec<T> tensor_vec(ParameterStore<T> &store, int id) {
  return CVec<T>(store.values(id), store.tensors()[static_cast<size_t>(id)].numel());
}

/// Tensor @p id's values as its (rows, cols) matrix.
template <class T>
CMat<T> tensor_mat(ParameterStore<T> &store, int id) {
  const auto &shape = store.tensors()[static_cast<size_t>(id)].shape;
  return CMat<T>(store.values(id), shape[0], shape[1]);
}

}  // namespace zrt::nn
