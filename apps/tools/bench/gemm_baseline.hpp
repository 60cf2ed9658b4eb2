// The baseline of the model benchmarks (zrt-bench gpt2, bert): the gemms one training step
// of a rank's share makes, on the model's own shapes, through KokkosBlas::gemm, and the
// timer both sides are measured with.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <functional>
#include <vector>

/// The slowest rank's time of one call of @p fn (fenced). Collective over MPI_COMM_WORLD.
double timed_on_all_ranks(const std::function<void()> &fn);

/// Median over @p reps runs of timed_on_all_ranks(@p fn), after one warm-up call.
double median_step_time(int reps, const std::function<void()> &fn);

/// The median of @p values (the mean of the middle two for an even count); 0 for none.
double median_of(std::vector<double> values);

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
