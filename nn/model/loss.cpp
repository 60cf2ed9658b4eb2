#include "loss.hpp"

#include <stdexcept>

#include <zerort/nn/crossentropy.hpp>

namespace zrt::nn::model {

namespace loss_kernels {

// Sums in double: the loss is reported, and only the gradient (elementwise) is trained on.
double mse(CMat<float> y, CMat<float> t, Mat<float> dy, float g) {
  const int64_t n = y.extent(0) * y.extent(1), width = y.extent(1);
  double sum = 0;
  Kokkos::parallel_reduce(
      "mse_loss", RangePolicy(0, n),
      KOKKOS_LAMBDA(int64_t i, double &acc) {
        const float d = y(i / width, i % width) - t(i / width, i % width);
        dy(i / width, i % width) = 2.0f * g * d;
        acc += double(d) * double(d);
      },
      sum);
  return sum;
}

double l1(CMat<float> y, CMat<float> t, Mat<float> dy, float g) {
  const int64_t n = y.extent(0) * y.extent(1), width = y.extent(1);
  double sum = 0;
  Kokkos::parallel_reduce(
      "l1_loss", RangePolicy(0, n),
      KOKKOS_LAMBDA(int64_t i, double &acc) {
        const float d = y(i / width, i % width) - t(i / width, i % width);
        dy(i / width, i % width) = d > 0.0f ? g : d < 0.0f ? -g : 0.0f;
        acc += d >= 0.0f ? double(d) : -double(d);
      },
      sum);
  return sum;
}

}  // namespace loss_kernels

double loss_forward_backward(LossKind kind, bool sum, CMat<float> y, CMat<float> target,
                             Tokens classes, Mat<float> dy, double scale) {
  const int64_t rows = y.extent(0), n = rows * static_cast<int64_t>(y.extent(1));
  switch (kind) {
    case LossKind::mse: {
      const double total =
          loss_kernels::mse(y, target, dy, static_cast<float>(sum ? scale : scale / double(n)));
      return sum ? total : total / double(n);
    }
    case LossKind::l1: {
      const double total =
          loss_kernels::l1(y, target, dy, static_cast<float>(sum ? scale : scale / double(n)));
      return sum ? total : total / double(n);
    }
    case LossKind::cross_entropy: {
      // In place over a copy: the output itself stays as forward left it.
      Kokkos::deep_copy(dy, y);
      Kokkos::View<float *, MemSpace> losses("ce_losses", rows);
      const double mean = crossentropy_forward<float>(dy, Vec<float>(losses.data(), rows), classes);
      crossentropy_backward<float>(dy, classes,
                                   static_cast<float>(sum ? scale : scale / double(rows)));
      return sum ? mean * double(rows) : mean;
    }
    case LossKind::external:
      break;
  }
  throw std::logic_error("loss_forward_backward: the external loss is the program's");
}

}  // namespace zrt::nn::model
