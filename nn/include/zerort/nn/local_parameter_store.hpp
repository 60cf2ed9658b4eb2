// A ParameterStore that keeps every tensor in one contiguous buffer of values and one of
// gradients, carved into the named tensors in layout order (as llm.c does). This is the
// temporary single-program path until zerort's engine holds parameters, and the reference
// the tests check the model against. It enforces the engine's rules: each gradient is
// made ready exactly once per micro-step.
#pragma once

#include <string>
#include <vector>

#include "parameter_store.hpp"
#include "tensor.hpp"

namespace zrt::nn {

template <class T>
class LocalParameterStore final : public ParameterStore<T> {
 public:
  explicit LocalParameterStore(std::vector<TensorSpec> tensors);

  const std::vector<TensorSpec> &tensors() const override { return tensors_; }
  void set(int id, const T *host_values) override;
  void get(int id, T *host_values) override;
  T *values(int id) override;
  GradBuffer<T> grad(int id) override;
  void grad_ready(int id) override;

  /// Start a micro-step's backward. With @p accumulate, gradients are added to the ones of
  /// the previous micro-steps (gradient accumulation); without, they are overwritten.
  void begin_micro_step(bool accumulate);
  /// Throws std::logic_error naming the first tensor whose gradient was not made ready.
  void check_all_ready() const;

  /// The flat buffers, for the optimizer and for reductions.
  Kokkos::View<T *, MemSpace> values_flat() const { return values_; }
  Kokkos::View<T *, MemSpace> grads_flat() const { return grads_; }
  int64_t offset(int id) const { return offsets_.at(static_cast<size_t>(id)); }
  int64_t numel() const { return offsets_.back(); }

 private:
  void check_id(int id) const;

  std::vector<TensorSpec> tensors_;
  std::vector<int64_t> offsets_;  // tensors_.size() + 1 entries
  Kokkos::View<T *, MemSpace> values_, grads_;
  std::vector<char> ready_;
  bool accumulate_ = false;
};

extern template class LocalParameterStore<float>;
extern template class LocalParameterStore<double>;

}  // namespace zrt::nn
