// The optimizer kernels of every ISA this CPU has, against double-precision references,
// against each other, and against themselves cut at different places.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "comm/dtype.hpp"
#include "optim/kernels/kernels.hpp"
#include "runtime/error.hpp"
#include "support/vector_state.hpp"

using namespace zrt;

namespace {

std::vector<const KernelTable *> available() {
  std::vector<const KernelTable *> t{&scalar_kernels()};
  if (cpu_has_avx2()) t.push_back(&avx2_kernels());
  if (cpu_has_avx512()) t.push_back(&avx512_kernels());
  return t;
}

struct State {
  std::vector<float> w, m, v, g;
  explicit State(size_t n, unsigned seed) : w(n), m(n), v(n), g(n) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-1, 1);
    for (size_t i = 0; i < n; ++i) {
      w[i] = d(rng);
      m[i] = 0.1f * d(rng);
      v[i] = 0.01f * std::fabs(d(rng));
      g[i] = d(rng);
    }
  }
  OptimRange range(size_t begin, size_t count) {
    OptimRange r;
    r.weights = w.data() + begin;
    r.m = m.data() + begin;
    r.v = v.data() + begin;
    r.grads = g.data() + begin;
    r.count = count;
    return r;
  }
};

AdamStep adamw_step(int t, double lr, double wd) {
  AdamStep s;
  double bc1 = 1 - std::pow(0.9, t), bc2 = 1 - std::pow(0.999, t);
  s.step_size = static_cast<float>(-lr / bc1);
  s.inv_bc1 = static_cast<float>(1 / bc1);
  s.inv_sqrt_bc2 = static_cast<float>(1 / std::sqrt(bc2));
  s.decay = static_cast<float>(-lr * wd);
  s.grad_scale = 0.5f;
  return s;
}

}  // namespace

TEST(Kernels, AdamWMatchesADoubleReference) {
  const size_t n = 1037;
  for (const KernelTable *k : available()) {
    SCOPED_TRACE(k->isa);
    State s(n, 1), ref(n, 1);
    AdamStep st = adamw_step(3, 1e-2, 0.1);
    k->adam(st, s.range(0, n));
    for (size_t i = 0; i < n; ++i) {
      double g = ref.g[i] * 0.5, m = 0.9 * ref.m[i] + 0.1 * g, v = 0.999 * ref.v[i] + 0.001 * g * g;
      double bc1 = 1 - std::pow(0.9, 3), bc2 = 1 - std::pow(0.999, 3);
      double update = 1e-2 / bc1 * m / (std::sqrt(v) / std::sqrt(bc2) + 1e-8);
      double w = ref.w[i] * (1 - 1e-2 * 0.1) - update;
      // fp32 rounds each term: bound by the terms' magnitudes, not the (cancelling) result.
      double m_terms = std::fabs(0.9 * ref.m[i]) + std::fabs(0.1 * g);
      ASSERT_NEAR(s.m[i], m, 1e-6 * m_terms) << i;
      ASSERT_NEAR(s.v[i], v, 1e-6 * v + 1e-12) << i;
      // The update inherits m's relative error.
      double update_error = std::fabs(update) * 1e-6 * m_terms / (std::fabs(m) + 1e-30);
      ASSERT_NEAR(s.w[i], w, 1e-6 * (std::fabs(ref.w[i]) + std::fabs(update)) + update_error) << i;
    }
  }
}

TEST(Kernels, ResultsDoNotDependOnWhereARangeIsCut) {
  const size_t n = 1000;
  for (const KernelTable *k : available()) {
    SCOPED_TRACE(k->isa);
    State whole(n, 2), pieces(n, 2);
    AdamStep st = adamw_step(1, 1e-3, 0.01);
    k->adam(st, whole.range(0, n));
    size_t cuts[] = {0, 3, 20, 21, 500, 997, n};
    for (size_t c = 0; c + 1 < std::size(cuts); ++c)
      k->adam(st, pieces.range(cuts[c], cuts[c + 1] - cuts[c]));
    EXPECT_EQ(std::memcmp(whole.w.data(), pieces.w.data(), n * 4), 0);
    EXPECT_EQ(std::memcmp(whole.v.data(), pieces.v.data(), n * 4), 0);
  }
}

TEST(Kernels, HalfPrecisionGradientsAndWeightCopies) {
  const size_t n = 333;
  for (const KernelTable *k : available()) {
    SCOPED_TRACE(k->isa);
    for (zrt_dtype_t dt : {ZRT_DTYPE_BF16, ZRT_DTYPE_FP16}) {
      State s(n, 3), ref(n, 3);
      std::vector<uint16_t> g16(n), copy(n);
      for (size_t i = 0; i < n; ++i) {
        g16[i] = dt == ZRT_DTYPE_BF16 ? float_to_bf16(s.g[i]) : float_to_fp16(s.g[i]);
        ref.g[i] = dt == ZRT_DTYPE_BF16 ? bf16_to_float(g16[i]) : fp16_to_float(g16[i]);
      }
      OptimRange r = s.range(0, n);
      r.grads = g16.data();
      r.grad_dtype = dt;
      r.copy = copy.data();
      r.copy_dtype = dt;
      AdamStep st = adamw_step(2, 1e-3, 0);
      k->adam(st, r);
      k->adam(st, ref.range(0, n));  // fp32 gradients holding the same values
      EXPECT_EQ(std::memcmp(s.w.data(), ref.w.data(), n * 4), 0);
      for (size_t i = 0; i < n; ++i) {
        uint16_t want = dt == ZRT_DTYPE_BF16 ? float_to_bf16(s.w[i]) : float_to_fp16(s.w[i]);
        ASSERT_EQ(copy[i], want) << i;
      }
    }
  }
}

TEST(Kernels, SgdMomentumAndNesterov) {
  const size_t n = 77;
  for (const KernelTable *k : available()) {
    SCOPED_TRACE(k->isa);
    for (bool nesterov : {false, true}) {
      State s(n, 4), ref(n, 4);
      SgdStep st;
      st.lr = 0.1f;
      st.momentum = 0.9f;
      st.weight_decay = 0.01f;
      st.nesterov = nesterov;
      k->sgd(st, s.range(0, n));
      for (size_t i = 0; i < n; ++i) {
        double g = ref.g[i] + 0.01 * ref.w[i];
        double buf = 0.9 * ref.m[i] + g;
        double step = nesterov ? g + 0.9 * buf : buf;
        ASSERT_NEAR(s.m[i], buf, 1e-6);
        ASSERT_NEAR(s.w[i], ref.w[i] - 0.1 * step, 1e-6);
      }
    }
  }
}

TEST(Kernels, LambTrustRatioPasses) {
  const size_t n = 500;
  for (const KernelTable *k : available()) {
    SCOPED_TRACE(k->isa);
    State s(n, 5), ref(n, 5);
    AdamStep st = adamw_step(1, 1e-2, 0);
    st.weight_decay = 0.01f;
    double w2 = 0, u2 = 0;
    k->lamb_moments(st, s.range(0, n), &w2, &u2);
    double rw = 0, ru = 0;
    std::vector<double> u(n);
    for (size_t i = 0; i < n; ++i) {
      double g = ref.g[i] * 0.5, m = 0.9 * ref.m[i] + 0.1 * g, v = 0.999 * ref.v[i] + 0.001 * g * g;
      u[i] = (m / (1 - 0.9)) / (std::sqrt(v / (1 - 0.999)) + 1e-8) + 0.01 * ref.w[i];
      rw += double(ref.w[i]) * ref.w[i];
      ru += u[i] * u[i];
    }
    EXPECT_NEAR(w2, rw, 1e-5 * rw);
    EXPECT_NEAR(u2, ru, 1e-5 * ru);
    k->lamb_apply(st, s.range(0, n), 0.25f);
    for (size_t i = 0; i < n; ++i)
      ASSERT_NEAR(s.w[i], ref.w[i] - 0.25 * u[i], 1e-5 * (1 + std::fabs(u[i])));
  }
}

// Each ISA's order of a sum of squares, written out: vectors of W floats, each reduced in
// double by its fixed tree, then added one after another from 0 (the last vector zero-
// padded). Scalar: W = 1, the squares in a row.
double squares_in_order(const std::string &isa, const float *x, size_t n) {
  const size_t W = isa == "avx512" ? 16 : isa == "avx2" ? 8 : 1;
  double total = 0;
  for (size_t base = 0; base < n; base += W) {
    double e[16] = {};
    for (size_t k = 0; k < W && base + k < n; ++k)
      e[k] = x[base + k];
    double r = 0;
    if (W == 16) {
      double s[8], t[4];
      for (int k = 0; k < 8; ++k)
        s[k] = std::fma(e[k], e[k], e[k + 8] * e[k + 8]);
      for (int k = 0; k < 4; ++k)
        t[k] = s[k + 4] + s[k];
      r = (t[2] + t[0]) + (t[3] + t[1]);
    } else if (W == 8) {
      double s[4];
      for (int k = 0; k < 4; ++k)
        s[k] = std::fma(e[k], e[k], e[k + 4] * e[k + 4]);
      r = (s[0] + s[2]) + (s[1] + s[3]);
    } else {
      r = e[0] * e[0];
    }
    total += r;
  }
  return total;
}

TEST(Kernels, SumsOfSquaresKeepEachIsasOrderBitForBit) {
  // The gradient norm's blocks and LAMB's norms hold to the order above, over counts with
  // and without a tail and across norm blocks, on values whose squares round differently
  // in other orders: the gradient norm (and so clipping) and LAMB's trust ratios are the
  // same bits from run to run and version to version on one ISA.
  for (const KernelTable *k : available()) {
    SCOPED_TRACE(k->isa);
    for (const size_t n : {size_t{1}, size_t{16 * 8}, size_t{16 * 8 + 5}, size_t{16 * 13 + 9},
                           size_t{4096}, size_t{4096 * 2 + 16 * 3 + 1}}) {
      State s(n, static_cast<unsigned>(n)), ref = s;
      for (size_t i = 0; i < n; ++i)
        ref.g[i] = s.g[i] = s.g[i] * 1e3f + 1.0f / 3.0f;
      double want = 0;
      for (size_t b = 0; b < n; b += kNormBlock)
        want += squares_in_order(k->isa, s.g.data() + b, std::min(kNormBlock, n - b));
      EXPECT_EQ(k->sum_squares(s.g.data(), ZRT_DTYPE_FP32, n), want) << n;
      // LAMB: w's squares as they are; u's from the direction lamb_apply writes over zero
      // weights (w' = 0 + 1 * u exactly, from the same updated moments).
      AdamStep st = adamw_step(1, 1e-2, 0);
      double w2 = 0, u2 = 0;
      k->lamb_moments(st, s.range(0, n), &w2, &u2);
      EXPECT_EQ(w2, squares_in_order(k->isa, ref.w.data(), n)) << n;
      State z = ref;
      std::fill(z.w.begin(), z.w.end(), 0.0f);
      k->lamb_moments(st, z.range(0, n), &w2, &u2);
      k->lamb_apply(st, z.range(0, n), -1.0f);
      EXPECT_EQ(w2, 0.0);
      EXPECT_EQ(u2, squares_in_order(k->isa, z.w.data(), n)) << n;
    }
  }
}

TEST(Kernels, NormsOverflowChecksAndConversion) {
  std::vector<float> x(10000);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i % 7) - 3.0f;
  double want = 0;
  for (float v : x)
    want += double(v) * v;
  std::vector<uint16_t> bf(x.size()), out(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    bf[i] = float_to_bf16(x[i]);
  for (const KernelTable *k : available()) {
    SCOPED_TRACE(k->isa);
    EXPECT_EQ(k->sum_squares(x.data(), ZRT_DTYPE_FP32, x.size()), want);
    EXPECT_EQ(k->sum_squares(bf.data(), ZRT_DTYPE_BF16, bf.size()), want);
    EXPECT_FALSE(k->non_finite(x.data(), ZRT_DTYPE_FP32, x.size()));
    std::vector<float> bad = x;
    bad[9999] = std::numeric_limits<float>::infinity();
    EXPECT_TRUE(k->non_finite(bad.data(), ZRT_DTYPE_FP32, bad.size()));
    bad[9999] = 0;
    bad[4] = std::nanf("");
    EXPECT_TRUE(k->non_finite(bad.data(), ZRT_DTYPE_FP32, bad.size()));
    std::vector<uint16_t> hbad(bf);
    hbad[17] = 0x7c00;  // fp16 +Inf
    EXPECT_TRUE(k->non_finite(hbad.data(), ZRT_DTYPE_FP16, 20));
    k->convert(x.data(), out.data(), ZRT_DTYPE_BF16, x.size());
    EXPECT_EQ(out, bf);
  }
}

TEST(Kernels, SelectionHonoursTheRequestAndRefusesMissingIsas) {
  EXPECT_STREQ(select_kernels("scalar").isa, "scalar");
  EXPECT_STRNE(select_kernels("auto").isa, "");
  if (!cpu_has_avx512()) {
    EXPECT_THROW(select_kernels("avx512"), Error);
  }
  EXPECT_THROW(select_kernels("sse9"), Error);
}

// Code compiled for SSE (most of a program) runs several times slower while the upper
// halves of the vector registers are dirty: every kernel cleans them before it returns.
TEST(Kernels, LeaveTheUpperVectorStateClean) {
  if (!testutil::upper_vector_state_dirty()) GTEST_SKIP() << "this CPU does not report XINUSE";
  for (const KernelTable *t : available()) {
    SCOPED_TRACE(t->isa);
    State s(1000, 5);
    t->adam(adamw_step(1, 1e-3, 0.01), s.range(0, 1000));
    EXPECT_FALSE(*testutil::upper_vector_state_dirty()) << "adam";
    SgdStep sgd;
    t->sgd(sgd, s.range(0, 1000));
    EXPECT_FALSE(*testutil::upper_vector_state_dirty()) << "sgd";
    EXPECT_GT(t->sum_squares(s.g.data(), ZRT_DTYPE_FP32, 1000), 0.0);
    EXPECT_FALSE(*testutil::upper_vector_state_dirty()) << "sum_squares";
    EXPECT_FALSE(t->non_finite(s.g.data(), ZRT_DTYPE_FP32, 1000));
    EXPECT_FALSE(*testutil::upper_vector_state_dirty()) << "non_finite";
    std::vector<uint16_t> half(1000);
    t->convert(s.w.data(), half.data(), ZRT_DTYPE_BF16, 1000);
    EXPECT_FALSE(*testutil::upper_vector_state_dirty()) << "convert";
  }
}
