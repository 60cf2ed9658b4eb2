// The layers' float elementwise loops for a host execution space, compiled for AVX-512,
// AVX2 and baseline x86-64 alike and picked once when the program loads (GCC's
// target_clones). A build for baseline x86-64 (Debian's, this project's default) has
// 4-lane SSE vectors, which left GELU at 4.3 ns an element; the AVX-512 copy of the same
// loop runs at 1.1 ns with the same bits (2026-12-04, a standalone copy). The bits stay
// because the lanes evaluate the one scalar definition (gelu_math.hpp, fast_exp.hpp)
// operation for operation: no floating-point contraction in any copy nor anywhere else in
// zrt_nn (-ffp-contract=off) and no reordering. Other compilers and other architectures
// build the baseline loop alone.
//
// The kernels call these on contiguous chunks from a Kokkos range, so a threaded host
// back end (OpenMP) still spreads them over its threads. A device back end never does.
#pragma once

#include <cstdint>
#include <type_traits>

#include "tensor.hpp"

namespace zrt::nn::host_loops {

/// Whether a layer over T takes these loops: float, in an execution space whose memory is
/// the host's (Serial, OpenMP, Threads).
template <class T>
inline constexpr bool taken_for = (std::is_same_v<T, float> &&
                                   std::is_same_v<MemSpace, Kokkos::HostSpace>);

/// out[i] = gelu_tanh(in[i]) for i < n. out and in do not overlap.
void gelu_tanh_forward(float *out, const float *in, int64_t n);
/// dinp[i] = gelu_tanh_backward(in[i], dout[i]) for i < n. dinp may be dout (in place);
/// otherwise neither overlaps another.
void gelu_tanh_backward(float *dinp, const float *in, const float *dout, int64_t n);
/// out[i] = gelu_erf(in[i]) for i < n. out and in do not overlap.
void gelu_erf_forward(float *out, const float *in, int64_t n);
/// dinp[i] = gelu_erf_backward(in[i], dout[i]) for i < n; overlap as gelu_tanh_backward.
void gelu_erf_backward(float *dinp, const float *in, const float *dout, int64_t n);
/// row[i] = softmax_exp(row[i], max) for i < n: the softmaxes' exp (softmax_exp.hpp).
void exp_below_max(float *row, float max, int64_t n);

/// The first index of the row's largest element, as the loop `best = 0; for v: if (row[v] >
/// row[best]) best = v` finds it (a NaN never wins, one at index 0 always does); 0 for an
/// empty row. The loss's accuracy over the vocabulary.
int64_t first_max_index(const float *row, int64_t n);

/// sums[c] = the sum of x[n * ld + c] over the rows n = 0 .. rows-1, in order, for c < cols:
/// column_sums.hpp's reduction of one plain term (a linear layer's bias gradient), the same
/// bits. The columns of x may be a part of wider rows (ld >= cols).
void column_sums(float *sums, const float *x, int64_t rows, int64_t cols, int64_t ld);
/// LayerNorm's parameter gradients' sums, as column_sums.hpp adds them: for c < cols,
/// dweight[c] = the sum over rows n of dout[n, c] * (inp[n, c] - mean[n]) * rstd[n], and
/// dbias[c] = the sum of dout[n, c]; rows of ld elements.
void layernorm_param_sums(float *dweight, float *dbias, const float *dout, const float *inp,
                          const float *mean, const float *rstd, int64_t rows, int64_t cols,
                          int64_t ld);

/// The copy the loader picked: "avx512f", "avx2" or "baseline" (for benchmarks' output).
const char *isa();

/// Elements per chunk of a Kokkos range over these loops: large enough to amortize the
/// call, small enough to share among threads.
inline constexpr int64_t kChunk = 16384;
/// Chunks of kChunk elements (the last one shorter) that cover n.
inline int64_t chunks(int64_t n) {
  return (n + kChunk - 1) / kChunk;
}

}  // namespace zrt::nn::host_loops
