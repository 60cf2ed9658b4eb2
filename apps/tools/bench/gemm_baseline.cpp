#include "gemm_baseline.hpp"
#include "timing.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>

#include <zerort/nn/matmul.hpp>

double timed_on_all_ranks(const std::function<void()> &fn) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = wall_seconds();
  fn();
  Kokkos::fence();
  double dt = wall_seconds() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return dt;
}

double median_step_time(int reps, const std::function<void()> &fn) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i)
    t.push_back(timed_on_all_ranks(fn));
  return median_of(std::move(t));
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

GemmStep::GemmStep(std::vector<Shape> shapes, int64_t rows) : n_(rows), shapes_(std::move(shapes)) {
  int64_t max_in = 0, max_out = 0, max_rows = 0;
  for (Shape &s : shapes_) {
    if (s.rows == 0) s.rows = n_;
    max_in = std::max(max_in, s.in);
    max_out = std::max(max_out, s.out);
    max_rows = std::max(max_rows, s.rows);
  }
  x_ = Kokkos::View<float *>("x", size_t(max_rows * max_in));
  y_ = Kokkos::View<float *>("y", size_t(max_rows * max_out));
  w_ = Kokkos::View<float *>("w", size_t(max_in * max_out));
  dx_ = Kokkos::View<float *>("dx", size_t(max_rows * max_in));
  dw_ = Kokkos::View<float *>("dw", size_t(max_in * max_out));
  Kokkos::deep_copy(x_, 0.01f);
  Kokkos::deep_copy(y_, 0.01f);
  Kokkos::deep_copy(w_, 0.01f);
}

double GemmStep::flops() const {
  double f = 0;
  for (const Shape &s : shapes_)
    f += 3.0 * 2.0 * double(s.rows) * double(s.in) * double(s.out) * s.count;
  return f;
}

void GemmStep::run() {
  using zrt::nn::CMat;
  using zrt::nn::Mat;
  for (const Shape &s : shapes_) {
    // As in training, the input stays, the input gradient and the weight gradient have
    // buffers of their own: writing them over X and W instead made the values grow layer
    // after layer into inf and NaN, and the baseline slower than the model's own gemms.
    Mat<float> X(x_.data(), size_t(s.rows), size_t(s.in)),
        Y(y_.data(), size_t(s.rows), size_t(s.out)), W(w_.data(), size_t(s.out), size_t(s.in)),
        DX(dx_.data(), size_t(s.rows), size_t(s.in)), DW(dw_.data(), size_t(s.out), size_t(s.in));
    for (int l = 0; l < s.count; ++l) {
      zrt::nn::gemm<float>("N", "T", 1.0f, CMat<float>(X), CMat<float>(W), 0.0f, Y);   // forward
      zrt::nn::gemm<float>("N", "N", 1.0f, CMat<float>(Y), CMat<float>(W), 0.0f, DX);  // dinp
      zrt::nn::gemm<float>("T", "N", 1.0f, CMat<float>(Y), CMat<float>(X), 1.0f, DW);  // dweight
    }
  }
}
