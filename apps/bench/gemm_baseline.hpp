// The baseline of the model benchmarks (zrt-bench gpt2, bert): the gemms one training step
// of a rank's share makes, on the model's own shapes, through KokkosBlas::gemm, and the
// timer both sides are measured with.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <functional>
#include <vector>

/// Median over @p reps runs of the slowest rank's time of @p fn (fenced), after one
/// warm-up call. Collective over MPI_COMM_WORLD.
double median_step_time(int reps, const std::function<void()> &fn);

/// For each linear layer of a step over @p rows positions: its forward product and both
/// backward ones (input and weight gradients).
class GemmStep {
 public:
  struct Shape {
    int64_t in, out;   // C -> OC
    int count;         // layers with this shape
    int64_t rows = 0;  // positions through it; 0: the step's rows
  };
  GemmStep(std::vector<Shape> shapes, int64_t rows);
  /// FLOPs of one run().
  double flops() const;
  void run();

 private:
  int64_t n_;
  std::vector<Shape> shapes_;
  Kokkos::View<float *> x_, y_, w_, dx_, dw_;
};
