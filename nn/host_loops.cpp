#include <zerort/nn/host_loops.hpp>

#include <zerort/nn/fast_exp.hpp>
#include <zerort/nn/gelu_math.hpp>
#include <zerort/nn/softmax_exp.hpp>

// GCC on x86-64 for the host only, as nn/CMakeLists.txt decides (with the flags that
// keep the bits): nvcc (Kokkos on CUDA compiles these files too) and other compilers build
// the single baseline loop.
#if defined(ZRT_NN_HOST_CLONES) && defined(__x86_64__) && !defined(__CUDACC__)
#define NN_HOST_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define NN_HOST_CLONED 1
#else
#define NN_HOST_CLONES
#define NN_HOST_CLONED 0
#endif

namespace zrt::nn::host_loops {

NN_HOST_CLONES void gelu_tanh_forward(float *__restrict out, const float *__restrict in,
                                      int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = gelu_tanh(in[i]);
}

namespace {
// Two loops, so that each has no possible overlap for the vectorizer to check at run time
// (in place, the same index is read and then written: no dependence across lanes).
NN_HOST_CLONES void gelu_backward_in_place(float *__restrict d, const float *__restrict in,
                                           int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    d[i] = zrt::nn::gelu_tanh_backward(in[i], d[i]);
}
NN_HOST_CLONES void gelu_backward_apart(float *__restrict dinp, const float *__restrict in,
                                        const float *__restrict dout, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dinp[i] = zrt::nn::gelu_tanh_backward(in[i], dout[i]);
}
}  // namespace

void gelu_tanh_backward(float *dinp, const float *in, const float *dout, int64_t n) {
  if (dinp == dout)
    gelu_backward_in_place(dinp, in, n);
  else
    gelu_backward_apart(dinp, in, dout, n);
}

NN_HOST_CLONES void gelu_erf_forward(float *__restrict out, const float *__restrict in, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = gelu_erf(in[i]);
}

namespace {
NN_HOST_CLONES void gelu_erf_backward_in_place(float *__restrict d, const float *__restrict in,
                                               int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    d[i] = zrt::nn::gelu_erf_backward(in[i], d[i]);
}
NN_HOST_CLONES void gelu_erf_backward_apart(float *__restrict dinp, const float *__restrict in,
                                            const float *__restrict dout, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dinp[i] = zrt::nn::gelu_erf_backward(in[i], dout[i]);
}
}  // namespace

void gelu_erf_backward(float *dinp, const float *in, const float *dout, int64_t n) {
  if (dinp == dout)
    gelu_erf_backward_in_place(dinp, in, n);
  else
    gelu_erf_backward_apart(dinp, in, dout, n);
}

NN_HOST_CLONES void exp_below_max(float *__restrict row, float max, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    row[i] = softmax_exp(row[i], max);
}

namespace {
// column_sums.hpp's block of columns, each column's rows added in order into its own
// running sum (the lanes of the widest vectors the copy has).
constexpr int kColumnBlock = 64;
}  // namespace

NN_HOST_CLONES void column_sums(float *__restrict sums, const float *__restrict x, int64_t rows,
                                int64_t cols, int64_t ld) {
  for (int64_t c0 = 0; c0 < cols; c0 += kColumnBlock) {
    const int64_t width = cols - c0 < kColumnBlock ? cols - c0 : kColumnBlock;
    float s[kColumnBlock] = {};
    if (width == kColumnBlock) {  // a constant trip count, which the vectorizer unrolls
      for (int64_t n = 0; n < rows; ++n)
        for (int j = 0; j < kColumnBlock; ++j)
          s[j] += x[n * ld + c0 + j];
    } else {
      for (int64_t n = 0; n < rows; ++n)
        for (int64_t j = 0; j < width; ++j)
          s[j] += x[n * ld + c0 + j];
    }
    for (int64_t j = 0; j < width; ++j)
      sums[c0 + j] = s[j];
  }
}

NN_HOST_CLONES void layernorm_param_sums(float *__restrict dweight, float *__restrict dbias,
                                         const float *__restrict dout, const float *__restrict inp,
                                         const float *__restrict mean, const float *__restrict rstd,
                                         int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t c0 = 0; c0 < cols; c0 += kColumnBlock) {
    const int64_t width = cols - c0 < kColumnBlock ? cols - c0 : kColumnBlock;
    float w[kColumnBlock] = {}, b[kColumnBlock] = {};
    for (int64_t n = 0; n < rows; ++n) {
      const float m = mean[n], r = rstd[n];
      const float *d = dout + n * ld + c0, *x = inp + n * ld + c0;
      if (width == kColumnBlock) {
        for (int j = 0; j < kColumnBlock; ++j) {
          w[j] += d[j] * (x[j] - m) * r;
          b[j] += d[j];
        }
      } else {
        for (int64_t j = 0; j < width; ++j) {
          w[j] += d[j] * (x[j] - m) * r;
          b[j] += d[j];
        }
      }
    }
    for (int64_t j = 0; j < width; ++j) {
      dweight[c0 + j] = w[j];
      dbias[c0 + j] = b[j];
    }
  }
}

NN_HOST_CLONES int64_t first_max_index(const float *__restrict row, int64_t n) {
  if (n <= 0 || row[0] != row[0]) return 0;  // a NaN first: nothing compares greater
  // The largest value in independent lanes (a select per lane, which vectorizes; the
  // sequential loop's compare against row[best] does not), then its first index: the
  // loop's answer, since it moves only to a strictly greater value.
  constexpr int kLanes = 16;
  float lane[kLanes];
  for (int j = 0; j < kLanes; ++j)
    lane[j] = row[0];
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j)
      lane[j] = row[i + j] > lane[j] ? row[i + j] : lane[j];
  float best = row[0];
  for (; i < n; ++i)
    best = row[i] > best ? row[i] : best;
  for (int j = 0; j < kLanes; ++j)
    best = lane[j] > best ? lane[j] : best;
  for (int64_t v = 0; v < n; ++v)
    if (row[v] == best) return v;
  return 0;  // unreachable: best is one of the row's values, and not a NaN
}

const char *isa() {
#if NN_HOST_CLONED
  // The order target_clones tries them in.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "avx512f";
  if (__builtin_cpu_supports("avx2")) return "avx2";
#endif
  return "baseline";
}

}  // namespace zrt::nn::host_loops
