// The kernels, written once over a vector policy S (vector_ops.hpp) and included by one
// translation unit per ISA. Every element goes through the vector body: the last partial
// vector is processed on a zero-padded copy, so an element's result never depends on where
// a range starts or ends.
#pragma once

#include <algorithm>
#include <cstring>

#include "optim/kernels/kernels.hpp"
#include "optim/kernels/vector_ops.hpp"

namespace zrt::kernel_body {

struct F32 {
  using T = float;
};
struct Bf16 {
  using T = uint16_t;
};
struct F16 {
  using T = uint16_t;
};

template <class S, class G>
typename S::V load_grad(const typename G::T *p) {
  if constexpr (std::is_same_v<G, F32>)
    return S::load(p);
  else if constexpr (std::is_same_v<G, Bf16>)
    return S::load_bf16(p);
  else
    return S::load_fp16(p);
}

template <class S>
void store_copy(void *copy, zrt_dtype_t dtype, size_t i, typename S::V w) {
  if (copy == nullptr) return;
  if (dtype == ZRT_DTYPE_BF16)
    S::store_bf16(static_cast<uint16_t *>(copy) + i, w);
  else if (dtype == ZRT_DTYPE_FP16)
    S::store_fp16(static_cast<uint16_t *>(copy) + i, w);
  else
    S::store(static_cast<float *>(copy) + i, w);
}

// Runs block(pointers at element i) for every full vector, then once more on zero-padded
// copies of the tail. Tail buffers: weights, m, v (fp32), grads (G), copy (any dtype).
template <class S, class G, class Block>
void for_each_vector(const OptimRange &r, Block &&block) {
  using T = typename G::T;
  const size_t W = S::W;
  const size_t full = r.count - r.count % W;
  const auto *g = static_cast<const T *>(r.grads);
  for (size_t i = 0; i < full; i += W)
    block(r.weights + i, r.m ? r.m + i : nullptr, r.v ? r.v + i : nullptr, g + i, r.copy, i);
  const size_t tail = r.count - full;
  if (tail == 0) return;
  alignas(64) float w[S::W] = {}, m[S::W] = {}, v[S::W] = {};
  alignas(64) T gt[S::W] = {};
  alignas(64) float copy[S::W] = {};  // large enough for any dtype's W elements
  std::memcpy(w, r.weights + full, tail * sizeof(float));
  if (r.m) std::memcpy(m, r.m + full, tail * sizeof(float));
  if (r.v) std::memcpy(v, r.v + full, tail * sizeof(float));
  std::memcpy(gt, g + full, tail * sizeof(T));
  block(w, r.m ? m : nullptr, r.v ? v : nullptr, gt, r.copy ? static_cast<void *>(copy) : nullptr,
        size_t{0});
  std::memcpy(r.weights + full, w, tail * sizeof(float));
  if (r.m) std::memcpy(r.m + full, m, tail * sizeof(float));
  if (r.v) std::memcpy(r.v + full, v, tail * sizeof(float));
  if (r.copy) {
    size_t es = r.copy_dtype == ZRT_DTYPE_FP32 ? 4 : 2;
    std::memcpy(static_cast<char *>(r.copy) + full * es, copy, tail * es);
  }
}

template <class S, class G>
void adam(const AdamStep &s, const OptimRange &r) {
  using V = typename S::V;
  const V b1 = S::set1(s.beta1), b2 = S::set1(s.beta2), omb1 = S::set1(s.one_minus_beta1),
          omb2 = S::set1(s.one_minus_beta2), eps = S::set1(s.eps), ibc2 = S::set1(s.inv_sqrt_bc2),
          step = S::set1(s.step_size), decay = S::set1(s.decay), l2 = S::set1(s.l2),
          gs = S::set1(s.grad_scale);
  const bool use_decay = s.decay != 0, use_l2 = s.l2 != 0;
  for_each_vector<S, G>(
      r, [&](float *w, float *m, float *v, const typename G::T *g, void *copy, size_t i) {
        V wv = S::load(w);
        V gv = S::mul(load_grad<S, G>(g), gs);
        if (use_l2) gv = S::fma(l2, wv, gv);
        V mv = S::fma(S::load(m), b1, S::mul(gv, omb1));
        V vv = S::fma(S::load(v), b2, S::mul(S::mul(gv, gv), omb2));
        V denom = S::fma(S::sqrt(vv), ibc2, eps);
        V update = S::div(mv, denom);
        if (use_decay) wv = S::fma(wv, decay, wv);
        wv = S::fma(update, step, wv);
        S::store(w, wv);
        S::store(m, mv);
        S::store(v, vv);
        store_copy<S>(copy, r.copy_dtype, i, wv);
      });
}

template <class S, class G>
void sgd(const SgdStep &s, const OptimRange &r) {
  using V = typename S::V;
  const V lr = S::set1(-s.lr), mu = S::set1(s.momentum), wd = S::set1(s.weight_decay),
          gs = S::set1(s.grad_scale);
  const bool use_wd = s.weight_decay != 0, use_momentum = s.momentum != 0;
  for_each_vector<S, G>(
      r, [&](float *w, float *m, float *, const typename G::T *g, void *copy, size_t i) {
        V wv = S::load(w);
        V gv = S::mul(load_grad<S, G>(g), gs);
        if (use_wd) gv = S::fma(wd, wv, gv);
        if (use_momentum) {
          V buf = S::fma(S::load(m), mu, gv);  // buf = momentum * buf + g
          S::store(m, buf);
          gv = s.nesterov ? S::fma(buf, mu, gv) : buf;
        }
        wv = S::fma(gv, lr, wv);
        S::store(w, wv);
        store_copy<S>(copy, r.copy_dtype, i, wv);
      });
}

// LAMB's direction u = mhat / (sqrt(vhat) + eps) + weight_decay * w, from updated moments.
template <class S>
typename S::V lamb_direction(const AdamStep &s, typename S::V w, typename S::V m, typename S::V v) {
  auto denom = S::fma(S::sqrt(v), S::set1(s.inv_sqrt_bc2), S::set1(s.eps));
  auto u = S::div(S::mul(m, S::set1(s.inv_bc1)), denom);
  return S::fma(w, S::set1(s.weight_decay), u);
}

template <class S, class G>
void lamb_moments(const AdamStep &s, const OptimRange &r, double *w_sq, double *u_sq) {
  using V = typename S::V;
  const V b1 = S::set1(s.beta1), b2 = S::set1(s.beta2), omb1 = S::set1(s.one_minus_beta1),
          omb2 = S::set1(s.one_minus_beta2), gs = S::set1(s.grad_scale);
  double ws = 0, us = 0;
  for_each_vector<S, G>(r,
                        [&](float *w, float *m, float *v, const typename G::T *g, void *, size_t) {
                          V wv = S::load(w);
                          V gv = S::mul(load_grad<S, G>(g), gs);
                          V mv = S::fma(S::load(m), b1, S::mul(gv, omb1));
                          V vv = S::fma(S::load(v), b2, S::mul(S::mul(gv, gv), omb2));
                          S::store(m, mv);
                          S::store(v, vv);
                          ws += S::sum_squares(wv);
                          us += S::sum_squares(lamb_direction<S>(s, wv, mv, vv));
                        });
  *w_sq = ws;
  *u_sq = us;
}

template <class S>
void lamb_apply(const AdamStep &s, const OptimRange &r, float lr_trust) {
  using V = typename S::V;
  const V scale = S::set1(-lr_trust);
  for_each_vector<S, F32>(
      OptimRange{r.weights, r.m, r.v, r.weights, ZRT_DTYPE_FP32, r.copy, r.copy_dtype, r.count},
      [&](float *w, float *m, float *v, const float *, void *copy, size_t i) {
        V wv = S::load(w);
        wv = S::fma(lamb_direction<S>(s, wv, S::load(m), S::load(v)), scale, wv);
        S::store(w, wv);
        store_copy<S>(copy, r.copy_dtype, i, wv);
      });
}

template <class S, class G>
double sum_squares(const void *values, size_t count) {
  const auto *p = static_cast<const typename G::T *>(values);
  double total = 0;
  for (size_t base = 0; base < count; base += kNormBlock) {
    const size_t n = std::min(kNormBlock, count - base);
    const size_t full = n - n % S::W;
    double block = 0;
    for (size_t i = 0; i < full; i += S::W)
      block += S::sum_squares(load_grad<S, G>(p + base + i));
    if (full < n) {
      alignas(64) typename G::T t[S::W] = {};
      std::memcpy(t, p + base + full, (n - full) * sizeof(typename G::T));
      block += S::sum_squares(load_grad<S, G>(t));
    }
    total += block;
  }
  return total;
}

template <class S, class G>
bool non_finite(const void *values, size_t count) {
  const auto *p = static_cast<const typename G::T *>(values);
  const size_t full = count - count % S::W;
  for (size_t i = 0; i < full; i += S::W)
    if (S::any_non_finite(load_grad<S, G>(p + i))) return true;
  if (full < count) {
    alignas(64) typename G::T t[S::W] = {};
    std::memcpy(t, p + full, (count - full) * sizeof(typename G::T));
    if (S::any_non_finite(load_grad<S, G>(t))) return true;
  }
  return false;
}

template <class S>
void convert(const float *in, void *out, zrt_dtype_t dtype, size_t count) {
  const size_t full = count - count % S::W;
  for (size_t i = 0; i < full; i += S::W)
    store_copy<S>(out, dtype, i, S::load(in + i));
  if (full < count) {
    alignas(64) float t[S::W] = {}, o[S::W] = {};
    std::memcpy(t, in + full, (count - full) * sizeof(float));
    store_copy<S>(o, dtype, 0, S::load(t));
    size_t es = dtype == ZRT_DTYPE_FP32 ? 4 : 2;
    std::memcpy(static_cast<char *>(out) + full * es, o, (count - full) * es);
  }
}

// Every kernel leaves the upper halves of the vector registers clean (vzeroupper) when it
// returns. While they are dirty, code compiled for SSE, which is most of the caller's
// program (its own loops, libm, OpenBLAS's SSE kernels), runs several times slower (the
// SSE/AVX transition penalty); GCC's automatic vzeroupper misses some of these kernels'
// exits (seen: zrt-gpt2's forward twice as slow after the first zrt_engine_step).
template <class S>
struct CleanUpper {
  CleanUpper() = default;
  CleanUpper(const CleanUpper &) = delete;
  CleanUpper &operator=(const CleanUpper &) = delete;
  ~CleanUpper() {
#if defined(__AVX__)
    if constexpr (S::W > 4) _mm256_zeroupper();
#endif
  }
};

// Dispatch on the gradient dtype once per call.
template <class S>
KernelTable make_table(const char *isa) {
  KernelTable t{};
  t.isa = isa;
  t.adam = [](const AdamStep &s, const OptimRange &r) {
    CleanUpper<S> clean;
    if (r.grad_dtype == ZRT_DTYPE_BF16)
      adam<S, Bf16>(s, r);
    else if (r.grad_dtype == ZRT_DTYPE_FP16)
      adam<S, F16>(s, r);
    else
      adam<S, F32>(s, r);
  };
  t.sgd = [](const SgdStep &s, const OptimRange &r) {
    CleanUpper<S> clean;
    if (r.grad_dtype == ZRT_DTYPE_BF16)
      sgd<S, Bf16>(s, r);
    else if (r.grad_dtype == ZRT_DTYPE_FP16)
      sgd<S, F16>(s, r);
    else
      sgd<S, F32>(s, r);
  };
  t.lamb_moments = [](const AdamStep &s, const OptimRange &r, double *w, double *u) {
    CleanUpper<S> clean;
    if (r.grad_dtype == ZRT_DTYPE_BF16)
      lamb_moments<S, Bf16>(s, r, w, u);
    else if (r.grad_dtype == ZRT_DTYPE_FP16)
      lamb_moments<S, F16>(s, r, w, u);
    else
      lamb_moments<S, F32>(s, r, w, u);
  };
  t.lamb_apply = [](const AdamStep &s, const OptimRange &r, float lr_trust) {
    CleanUpper<S> clean;
    lamb_apply<S>(s, r, lr_trust);
  };
  t.sum_squares = [](const void *v, zrt_dtype_t d, size_t n) {
    CleanUpper<S> clean;
    if (d == ZRT_DTYPE_BF16) return sum_squares<S, Bf16>(v, n);
    if (d == ZRT_DTYPE_FP16) return sum_squares<S, F16>(v, n);
    return sum_squares<S, F32>(v, n);
  };
  t.non_finite = [](const void *v, zrt_dtype_t d, size_t n) {
    CleanUpper<S> clean;
    if (d == ZRT_DTYPE_BF16) return non_finite<S, Bf16>(v, n);
    if (d == ZRT_DTYPE_FP16) return non_finite<S, F16>(v, n);
    return non_finite<S, F32>(v, n);
  };
  t.convert = [](const float *in, void *out, zrt_dtype_t d, size_t n) {
    CleanUpper<S> clean;
    convert<S>(in, out, d, n);
  };
  return t;
}

}  // namespace zrt::kernel_body
