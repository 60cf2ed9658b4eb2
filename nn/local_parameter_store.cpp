#include <zerort/nn/local_parameter_store.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace zrt::nn {

template <class T>
LocalParameterStore<T>::LocalParameterStore(std::vector<TensorSpec> tensors)
    : tensors_(std::move(tensors)), ready_(tensors_.size(), 0) {
  offsets_.push_back(0);
  for (const TensorSpec &t : tensors_)
    offsets_.push_back(offsets_.back() + t.numel());
  values_ = Kokkos::View<T *, MemSpace>("parameters", static_cast<size_t>(numel()));
  grads_ = Kokkos::View<T *, MemSpace>("gradients", static_cast<size_t>(numel()));
}

template <class T>
void LocalParameterStore<T>::check_id(int id) const {
  if (id < 0 || static_cast<size_t>(id) >= tensors_.size())
    throw std::out_of_range(fmt::format("parameter id {} is not in the layout", id));
}

template <class T>
void LocalParameterStore<T>::set(int id, const T *host_values) {
  check_id(id);
  auto dst = Kokkos::subview(values_, std::make_pair(offset(id), offset(id + 1)));
  Kokkos::View<const T *, Kokkos::HostSpace, Unmanaged> src(host_values, dst.extent(0));
  Kokkos::deep_copy(dst, src);
}

template <class T>
void LocalParameterStore<T>::get(int id, T *host_values) {
  check_id(id);
  auto src = Kokkos::subview(values_, std::make_pair(offset(id), offset(id + 1)));
  Kokkos::View<T *, Kokkos::HostSpace, Unmanaged> dst(host_values, src.extent(0));
  Kokkos::deep_copy(dst, src);
}

template <class T>
T *LocalParameterStore<T>::values(int id) {
  check_id(id);
  return values_.data() + offset(id);
}

template <class T>
GradBuffer<T> LocalParameterStore<T>::grad(int id) {
  check_id(id);
  if (ready_[static_cast<size_t>(id)])
    throw std::logic_error(fmt::format("gradient of {} asked for after it was made ready",
                                       tensors_[static_cast<size_t>(id)].name));
  return {grads_.data() + offset(id), accumulate_};
}

template <class T>
void LocalParameterStore<T>::grad_ready(int id) {
  check_id(id);
  if (ready_[static_cast<size_t>(id)])
    throw std::logic_error(fmt::format("gradient of {} made ready twice in one micro-step",
                                       tensors_[static_cast<size_t>(id)].name));
  ready_[static_cast<size_t>(id)] = 1;
}

template <class T>
void LocalParameterStore<T>::begin_micro_step(bool accumulate) {
  accumulate_ = accumulate;
  std::fill(ready_.begin(), ready_.end(), 0);
}

template <class T>
void LocalParameterStore<T>::check_all_ready() const {
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (!ready_[i])
      throw std::logic_error(
          fmt::format("gradient of {} was not made ready in backward", tensors_[i].name));
}

template class LocalParameterStore<float>;
template class LocalParameterStore<double>;

}  // namespace zrt::nn
