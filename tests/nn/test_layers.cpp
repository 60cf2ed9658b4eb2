// Every layer's backward against central finite differences of its forward, in double
// precision: the loss is sum(R * output) for a random R, so d(loss)/d(output) = R.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>

#include <zerort/nn.hpp>  // the umbrella compiles on its own
#include <zerort/nn/attention.hpp>
#include <zerort/nn/block_sum.hpp>
#include <zerort/nn/crossentropy.hpp>
#include <zerort/nn/embedding.hpp>
#include <zerort/nn/encoder.hpp>
#include <zerort/nn/fast_exp.hpp>
#include <zerort/nn/fast_tanh.hpp>
#include <zerort/nn/gelu.hpp>
#include <zerort/nn/gelu_math.hpp>
#include <zerort/nn/host_loops.hpp>
#include <zerort/nn/layernorm.hpp>
#include <zerort/nn/matmul.hpp>
#include <zerort/nn/residual.hpp>
#include <zerort/nn/rows.hpp>
#include <zerort/nn/tanh.hpp>
#include "gradient_check.hpp"

namespace zrt::nn::test {
namespace {

constexpr double kTolerance = 1e-6;
using Buf = DeviceBuffer<double>;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(Layers, MatmulGradients) {
  const int N = 6, C = 5, OC = 7;
  std::mt19937_64 rng(1);
  Buf inp(N * C), w(OC * C), b(OC), out(N * OC), r(N * OC);
  inp.randomize(rng);
  w.randomize(rng);
  b.randomize(rng);
  r.randomize(rng);
  auto loss = [&] {
    matmul_forward<double>(out.mat(N, OC), inp.cmat(N, C), w.cmat(OC, C), b.cvec());
    return dot(r.host, out.to_host());
  };
  // Gradient buffers start as NaN: beta 0 must overwrite without reading them.
  Buf dinp(N * C, kNaN), dw(OC * C, kNaN), db(OC, kNaN);
  loss();
  matmul_backward<double>(dinp.mat(N, C), dw.mat(OC, C), db.vec(), r.cmat(N, OC), inp.cmat(N, C),
                          w.cmat(OC, C), 0.0, 0.0);
  EXPECT_LT(max_gradient_error("matmul d inp", inp, dinp.to_host(), loss), kTolerance);
  EXPECT_LT(max_gradient_error("matmul d weight", w, dw.to_host(), loss), kTolerance);
  EXPECT_LT(max_gradient_error("matmul d bias", b, db.to_host(), loss), kTolerance);

  // beta 1 adds: a second backward doubles every gradient.
  std::vector<double> once_w = dw.host, once_b = db.host, once_in = dinp.host;
  matmul_backward<double>(dinp.mat(N, C), dw.mat(OC, C), db.vec(), r.cmat(N, OC), inp.cmat(N, C),
                          w.cmat(OC, C), 1.0, 1.0);
  dw.to_host();
  db.to_host();
  dinp.to_host();
  for (size_t i = 0; i < once_w.size(); ++i)
    EXPECT_DOUBLE_EQ(dw.host[i], 2 * once_w[i]);
  for (size_t i = 0; i < once_b.size(); ++i)
    EXPECT_DOUBLE_EQ(db.host[i], 2 * once_b[i]);
  for (size_t i = 0; i < once_in.size(); ++i)
    EXPECT_DOUBLE_EQ(dinp.host[i], 2 * once_in[i]);
}

TEST(Layers, MatmulWithoutBias) {
  const int N = 3, C = 4, OC = 2;
  std::mt19937_64 rng(2);
  Buf inp(N * C), w(OC * C), out(N * OC);
  inp.randomize(rng);
  w.randomize(rng);
  matmul_forward<double>(out.mat(N, OC), inp.cmat(N, C), w.cmat(OC, C), CVec<double>());
  out.to_host();
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < OC; ++o) {
      double want = 0;
      for (int c = 0; c < C; ++c)
        want += inp.host[n * C + c] * w.host[o * C + c];
      EXPECT_NEAR(out.host[n * OC + o], want, 1e-14);
    }
}

TEST(Layers, LayerNormGradients) {
  const int N = 6, C = 8;
  std::mt19937_64 rng(3);
  Buf inp(N * C), w(C), b(C), out(N * C), mean(N), rstd(N), r(N * C);
  inp.randomize(rng, 2.0);
  w.randomize(rng);
  b.randomize(rng);
  r.randomize(rng);
  auto loss = [&] {
    layernorm_forward<double>(out.mat(N, C), mean.vec(), rstd.vec(), inp.cmat(N, C), w.cvec(),
                              b.cvec());
    return dot(r.host, out.to_host());
  };
  loss();
  Buf dinp(N * C, kNaN), dw(C, kNaN), db(C, kNaN);
  layernorm_backward<double>(dinp.mat(N, C), dw.vec(), db.vec(), r.cmat(N, C), inp.cmat(N, C),
                             w.cvec(), mean.cvec(), rstd.cvec(), 0.0, 0.0);
  EXPECT_LT(max_gradient_error("layernorm d inp", inp, dinp.to_host(), loss), kTolerance);
  EXPECT_LT(max_gradient_error("layernorm d weight", w, dw.to_host(), loss), kTolerance);
  EXPECT_LT(max_gradient_error("layernorm d bias", b, db.to_host(), loss), kTolerance);
}

TEST(Layers, LayerNormNormalizes) {
  const int N = 4, C = 16;
  std::mt19937_64 rng(4);
  Buf inp(N * C), w(C, 1.0), b(C, 0.0), out(N * C), mean(N), rstd(N);
  inp.randomize(rng, 5.0);
  layernorm_forward<double>(out.mat(N, C), mean.vec(), rstd.vec(), inp.cmat(N, C), w.cvec(),
                            b.cvec());
  out.to_host();
  for (int n = 0; n < N; ++n) {
    double m = 0, v = 0;
    for (int c = 0; c < C; ++c)
      m += out.host[n * C + c] / C;
    for (int c = 0; c < C; ++c)
      v += (out.host[n * C + c] - m) * (out.host[n * C + c] - m) / C;
    EXPECT_NEAR(m, 0.0, 1e-12);
    EXPECT_NEAR(v, 1.0, 1e-3);  // 1 - eps * rstd^2
  }
}

// GELU's float tanh against tanh in double over [0, 12] by bit pattern (every 29th float:
// 37 million) and its negative: within 2 ulp of the rounded result, odd, exactly +-1 where
// it saturates.
TEST(Layers, FastTanhIsWithinTwoUlpOfTanh) {
  double worst = 0;
  float at = 0;
  int checked = 0;
  const uint32_t last = std::bit_cast<uint32_t>(12.0f);
  for (uint32_t bits = 0; bits <= last; bits += 29) {
    const float x = std::bit_cast<float>(bits);
    const float f = fast_tanh(x);
    const double exact = std::tanh(static_cast<double>(x));
    const float ref = static_cast<float>(exact);
    const double ulp =
        x == 0.0f ? std::numeric_limits<float>::denorm_min() : std::nextafter(ref, 2.0f) - ref;
    const double err = std::fabs(static_cast<double>(f) - exact) / ulp;
    if (err > worst) worst = err, at = x;
    if (fast_tanh(-x) != -f) ADD_FAILURE() << "not odd at " << x;
    ++checked;
  }
  EXPECT_GT(checked, 1000000);
  EXPECT_LE(worst, 2.0) << "at x = " << at;
  EXPECT_EQ(fast_tanh(20.0f), 1.0f);
  EXPECT_EQ(fast_tanh(-20.0f), -1.0f);
  EXPECT_EQ(fast_tanh(0.0f), 0.0f);
  EXPECT_EQ(fast_tanh(1e-30f), 1e-30f);
  // Double goes to the library.
  EXPECT_EQ(fast_tanh(0.5), std::tanh(0.5));
}

// The vectorizable float exp against exp in double over [-87, 88] by bit pattern (every
// 61st float of either sign: 35 million): within 1 ulp of the exact value; exact at 0.
TEST(Layers, FastExpIsWithinOneUlpOfExp) {
  double worst = 0;
  float at = 0;
  int64_t checked = 0;
  for (const float end : {88.0f, -87.0f}) {
    const uint32_t first = std::bit_cast<uint32_t>(std::copysign(0.0f, end));
    for (uint32_t bits = first; bits <= std::bit_cast<uint32_t>(end); bits += 61) {
      const float x = std::bit_cast<float>(bits);
      const double exact = std::exp(static_cast<double>(x));
      const float ref = static_cast<float>(exact);
      const double ulp = static_cast<double>(std::nextafter(ref, 1e38f)) - ref;
      const double err = std::fabs(static_cast<double>(fast_exp(x)) - exact) / ulp;
      if (err > worst) worst = err, at = x;
      ++checked;
    }
  }
  EXPECT_GT(checked, 30000000);
  EXPECT_LE(worst, 1.0) << "at x = " << at;
  EXPECT_EQ(fast_exp(0.0f), 1.0f);
  // Past the range: normal floats, never a subnormal (slow) nor inf; NaN stays NaN.
  for (const float x :
       {-87.34f, -87.4f, -100.0f, -1e30f, -std::numeric_limits<float>::infinity()}) {
    EXPECT_EQ(std::fpclassify(fast_exp(x)), FP_NORMAL) << x;
    EXPECT_LT(fast_exp(x), 1.2e-38f) << x;
  }
  for (const float x : {88.5f, 1000.0f, std::numeric_limits<float>::infinity()}) {
    EXPECT_TRUE(std::isfinite(fast_exp(x))) << x;
    EXPECT_GT(fast_exp(x), 2.4e38f) << x;
  }
  EXPECT_TRUE(std::isnan(fast_exp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(fast_exp(0.5), std::exp(0.5));  // double goes to the library
}

namespace {
void column_sums_in_order(int C) {
  SCOPED_TRACE(C);
  const int N = 37;
  std::mt19937_64 rng(12);
  using FBuf = DeviceBuffer<float>;
  FBuf dout(N * C), inp(N * C), w(C, 1.0f), b(C), mean(N), rstd(N), dinp(N * C);
  dout.randomize(rng);
  inp.randomize(rng);
  mean.randomize(rng);
  rstd.randomize(rng);
  auto at = [&](const FBuf &m, int n, int c) { return m.host[static_cast<size_t>(n * C + c)]; };
  for (const float beta : {0.0f, 1.0f}) {
    const float start = beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : 0.25f;
    FBuf dbias(C, start), dw(C, start), db(C, start);
    // The product's own operands are small (3 inputs): the bias sum is what is checked.
    FBuf x(N * 3), weight(C * 3), dx(N * 3), dweight(C * 3);
    matmul_backward<float>(dx.mat(N, 3), dweight.mat(C, 3), dbias.vec(), dout.cmat(N, C),
                           x.cmat(N, 3), weight.cmat(C, 3), 0.0f, beta);
    layernorm_backward<float>(dinp.mat(N, C), dw.vec(), db.vec(), dout.cmat(N, C), inp.cmat(N, C),
                              w.cvec(), mean.cvec(), rstd.cvec(), 0.0f, beta);
    dbias.to_host();
    dw.to_host();
    db.to_host();
    for (int c = 0; c < C; ++c) {
      float sb = 0, sw = 0;
      for (int n = 0; n < N; ++n) {
        sb += at(dout, n, c);
        sw += at(dout, n, c) * (at(inp, n, c) - mean.host[size_t(n)]) * rstd.host[size_t(n)];
      }
      const float want_b = beta == 0.0f ? sb : start + sb, want_w = beta == 0.0f ? sw : start + sw;
      EXPECT_EQ(dbias.host[size_t(c)], want_b) << "bias column " << c;
      EXPECT_EQ(db.host[size_t(c)], want_b) << "LayerNorm bias column " << c;
      EXPECT_EQ(dw.host[size_t(c)], want_w) << "LayerNorm weight column " << c;
    }
  }
}
}  // namespace

// The bias and LayerNorm parameter gradients in float, over more columns than one host
// block (64) and a ragged last block, and more than one host chunk of columns (256): each
// column's rows added in row order, bit for bit what the one-thread-per-column walk gave,
// both overwriting (beta 0, over NaN) and adding.
TEST(Layers, ColumnSumsAddEachColumnsRowsInOrder) {
  for (const int C : {130, 600})
    column_sums_in_order(C);
}

// On the host, float GELU and the softmax's exp run in the widest vectors the CPU has
// (host_loops.hpp): bit for bit what the scalar formula gives, element by element, for
// GELU forward, backward apart and in place, over floats of every magnitude and sign
// (every 4099th bit pattern, NaNs among them), densely over [-10, 10] where GELU is not
// yet x or 0 (every 499th float), and at the edges: signed zeros, infinities, the
// smallest and largest floats, fast_tanh's switch at 0.625 and saturation at 9, fast_exp's
// clamps. Then the probabilities of the float softmax. On a device the kernels' own
// arithmetic applies: nothing to compare. Built, as zrt_nn, without contraction into FMA.
TEST(Layers, HostVectorLoopsGiveTheScalarBits) {
  if constexpr (!host_loops::taken_for<float>) GTEST_SKIP() << "not a host execution space";
  std::cout << "host loops: the " << host_loops::isa() << " copy\n";
  ::testing::Test::RecordProperty("host_loops", host_loops::isa());
  std::vector<float> xs;
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 4099)
    xs.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  for (const float end : {10.0f, -10.0f})
    for (uint32_t bits = std::bit_cast<uint32_t>(std::copysign(0.0f, end));
         bits <= std::bit_cast<uint32_t>(end); bits += 499)
      xs.push_back(std::bit_cast<float>(bits));
  using lim = std::numeric_limits<float>;
  for (const float x : {0.0f, lim::infinity(), lim::min(), lim::denorm_min(), lim::max(), 0.625f,
                        std::nextafter(0.625f, 0.0f), 4.5f, std::nextafter(4.5f, 9.0f),
                        87.33654022216797f / 2, 88.3762626647949f / 2, 9.0f, 1e-3f})
    for (const float sign : {1.0f, -1.0f})
      xs.push_back(sign * x);
  const size_t n = xs.size();
  auto same = [](float a, float b) {
    return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) ||
           (std::isnan(a) && std::isnan(b));
  };
  using FBuf = DeviceBuffer<float>;
  FBuf inp(n), dout(n), out(n), dinp(n);
  inp.host = xs;
  inp.to_device();
  std::mt19937_64 rng(5);
  dout.randomize(rng, 3.0);
  const std::vector<float> d = dout.host;
  for (const GeluForm form : {GeluForm::tanh, GeluForm::erf}) {
    const bool erf = form == GeluForm::erf;
    dout.host = d;
    dout.to_device();
    gelu_forward<float>(out.vec(), inp.cvec(), form);
    gelu_backward<float>(dinp.vec(), inp.cvec(), dout.cvec(), form);
    gelu_backward<float>(dout.vec(), inp.cvec(), dout.cvec(), form);  // in place
    out.to_host();
    dinp.to_host();
    dout.to_host();
    size_t differ = 0;
    for (size_t i = 0; i < n; ++i) {
      const float x = xs[i];
      const float want = erf ? gelu_erf(x) : gelu_tanh(x);
      const float want_back = erf ? gelu_erf_backward(x, d[i]) : gelu_tanh_backward(x, d[i]);
      if (!same(out.host[i], want) || !same(dinp.host[i], want_back) ||
          !same(dout.host[i], want_back))
        if (++differ <= 5)
          ADD_FAILURE() << (erf ? "erf" : "tanh") << " form, x = " << x << " (bits 0x" << std::hex
                        << std::bit_cast<uint32_t>(x) << std::dec << ")";
    }
    EXPECT_EQ(differ, 0u) << "of " << n << (erf ? " (erf form)" : " (tanh form)");
  }

  // Softmax rows: logits between -200 and 20, so that many fall past the cut 60 below the
  // largest (row 0's largest is 30, and one logit is exactly 60 below it); the row's length
  // is not a multiple of any vector's. The reference adds in blocks (block_sum.hpp), as the
  // layer's sum does on the host.
  const int rows = 3, V = 50257;
  FBuf logits(size_t(rows) * V), losses(rows);
  logits.randomize(rng, 110.0);
  for (float &v : logits.host)
    v -= 90.0f;
  logits.host[7] = 30.0f, logits.host[8] = -30.0f;  // row 0: its largest, and 60 below it
  logits.to_device();
  const std::vector<float> in = logits.host;
  crossentropy_forward<float>(logits.mat(rows, V), losses.vec(), device_tokens({1, 2, 3}));
  logits.to_host();
  for (int r = 0; r < rows; ++r) {
    const float *row = in.data() + size_t(r) * V;
    float maxv = row[0];
    for (int v = 0; v < V; ++v)
      maxv = row[v] > maxv ? row[v] : maxv;
    std::vector<float> e(V);
    for (int v = 0; v < V; ++v) {
      const float dv = row[v] - maxv;  // softmax_exp, written out
      e[size_t(v)] = dv < -60.0f ? 0.0f : fast_exp(dv);
    }
    const float sum = block_sum<float>(V, [&](int64_t v) { return e[size_t(v)]; });
    const float inv = 1.0f / sum;
    int zeros = 0;
    for (int v = 0; v < V; ++v) {
      zeros += e[size_t(v)] == 0.0f;
      ASSERT_TRUE(same(logits.host[size_t(r) * V + v], e[size_t(v)] * inv))
          << "row " << r << ", logit " << v;
    }
    EXPECT_GT(zeros, 0) << "row " << r << " has no logit past the cut";
  }
}

TEST(Layers, GeluGradients) {
  const int N = 41;
  Buf inp(N), out(N), r(N);
  std::mt19937_64 rng(5);
  for (int i = 0; i < N; ++i)
    inp.host[static_cast<size_t>(i)] = -4.0 + 8.0 * i / (N - 1);
  inp.to_device();
  r.randomize(rng);
  auto loss = [&] {
    gelu_forward<double>(out.vec(), inp.cvec());
    return dot(r.host, out.to_host());
  };
  loss();
  EXPECT_NEAR(out.host[N / 2], 0.0, 1e-15);  // gelu(0) = 0
  EXPECT_NEAR(out.host[N - 1], 4.0, 1e-3);   // ~x for large x
  EXPECT_NEAR(out.host[0], 0.0, 1e-3);       // ~0 for very negative x
  Buf dinp(N, kNaN);
  gelu_backward<double>(dinp.vec(), inp.cvec(), r.cvec());
  EXPECT_LT(max_gradient_error("gelu d inp", inp, dinp.to_host(), loss), kTolerance);
}

TEST(Layers, ResidualAdds) {
  Buf a(5, 1.5), b(5, 2.25), out(5);
  residual_forward<double>(out.vec(), a.cvec(), b.cvec());
  for (double v : out.to_host())
    EXPECT_EQ(v, 3.75);
}

TEST(Layers, AttentionGradients) {
  const AttentionShape s{2, 5, 2, 3};  // B, T, NH, hs
  const int BT = s.B * s.T, C = s.NH * s.hs;
  std::mt19937_64 rng(6);
  Buf qkv(BT * 3 * C), out(BT * C), r(BT * C);
  Buf qkvp(3 * BT * C), att(s.B * s.NH * s.T * s.T), yp(BT * C);
  qkv.randomize(rng, 1.5);
  r.randomize(rng);
  auto loss = [&] {
    attention_forward<double>(out.mat(BT, C), qkvp.vec(), att.vec(), yp.vec(), qkv.cmat(BT, 3 * C),
                              s);
    return dot(r.host, out.to_host());
  };
  loss();
  // Causality: row t of each head's attention sums to 1 over t2 <= t, 0 beyond.
  att.to_host();
  for (int row = 0; row < s.B * s.NH * s.T; ++row) {
    const int t = row % s.T;
    double sum = 0;
    for (int t2 = 0; t2 < s.T; ++t2) {
      const double a = att.host[static_cast<size_t>(row * s.T + t2)];
      if (t2 > t) {
        EXPECT_EQ(a, 0.0);
      }
      sum += a;
    }
    EXPECT_NEAR(sum, 1.0, 1e-14);
  }
  Buf dqkv(BT * 3 * C, kNaN), dqkvp(3 * BT * C, kNaN), datt(att.size(), kNaN), doutp(BT * C);
  attention_backward<double>(dqkv.mat(BT, 3 * C), dqkvp.vec(), datt.vec(), doutp.vec(),
                             r.cmat(BT, C), qkvp.cvec(), att.cvec(), s);
  EXPECT_LT(max_gradient_error("attention d qkv", qkv, dqkv.to_host(), loss), kTolerance);
}

TEST(Layers, AttentionIsCausal) {
  // Changing the last position's q, k, v leaves every earlier output unchanged.
  const AttentionShape s{1, 4, 2, 2};
  const int BT = s.B * s.T, C = s.NH * s.hs;
  std::mt19937_64 rng(7);
  Buf qkv(BT * 3 * C), out(BT * C), qkvp(3 * BT * C), att(s.NH * s.T * s.T), yp(BT * C);
  qkv.randomize(rng);
  attention_forward<double>(out.mat(BT, C), qkvp.vec(), att.vec(), yp.vec(), qkv.cmat(BT, 3 * C),
                            s);
  std::vector<double> before = out.to_host();
  for (int j = 0; j < 3 * C; ++j)
    qkv.host[static_cast<size_t>((BT - 1) * 3 * C + j)] += 1.0;
  qkv.to_device();
  attention_forward<double>(out.mat(BT, C), qkvp.vec(), att.vec(), yp.vec(), qkv.cmat(BT, 3 * C),
                            s);
  out.to_host();
  for (int i = 0; i < (BT - 1) * C; ++i)
    EXPECT_EQ(out.host[static_cast<size_t>(i)], before[static_cast<size_t>(i)]) << i;
  bool last_changed = false;
  for (int i = (BT - 1) * C; i < BT * C; ++i)
    last_changed |= out.host[static_cast<size_t>(i)] != before[static_cast<size_t>(i)];
  EXPECT_TRUE(last_changed);
}

TEST(Layers, EncoderGradients) {
  const int V = 7, maxT = 6, C = 4, B = 2, Tn = 5;
  std::mt19937_64 rng(8);
  Buf wte(V * C), wpe(maxT * C), out(B * Tn * C), r(B * Tn * C);
  wte.randomize(rng);
  wpe.randomize(rng);
  r.randomize(rng);
  auto tokens = device_tokens({3, 1, 3, 0, 6, 6, 2, 3, 3, 1});  // repeats on purpose
  auto loss = [&] {
    encoder_forward<double>(out.mat(B * Tn, C), tokens, wte.cmat(V, C), wpe.cmat(maxT, C), B, Tn);
    return dot(r.host, out.to_host());
  };
  loss();
  // The scatter into dwte always adds (the LM head wrote it first): start from zero here.
  Buf dwte(V * C, 0.0), dwpe(maxT * C, kNaN);
  encoder_backward<double>(dwte.mat(V, C), dwpe.mat(maxT, C), r.cmat(B * Tn, C), tokens, B, Tn,
                           0.0);
  EXPECT_LT(max_gradient_error("encoder d wte", wte, dwte.to_host(), loss), kTolerance);
  EXPECT_LT(max_gradient_error("encoder d wpe", wpe, dwpe.to_host(), loss), kTolerance);
  for (int c = 0; c < C; ++c)  // position Tn is past the sequence: no gradient
    EXPECT_EQ(dwpe.host[static_cast<size_t>(Tn * C + c)], 0.0);
}

TEST(Layers, CrossEntropyGradients) {
  const int N = 6, V = 9;
  std::mt19937_64 rng(9);
  Buf logits(N * V), probs(N * V), losses(N);
  logits.randomize(rng, 3.0);
  auto targets = device_tokens({0, 8, 4, 4, 2, 7});
  auto loss = [&] {
    Kokkos::deep_copy(probs.device, logits.device);
    return crossentropy_forward<double>(probs.mat(N, V), losses.vec(), targets);
  };
  double mean = loss();
  // Against a direct computation of -log softmax.
  double want = 0;
  const int target[] = {0, 8, 4, 4, 2, 7};
  for (int n = 0; n < N; ++n) {
    double z = 0;
    for (int v = 0; v < V; ++v)
      z += std::exp(logits.host[static_cast<size_t>(n * V + v)]);
    want += (std::log(z) - logits.host[static_cast<size_t>(n * V + target[n])]) / N;
  }
  EXPECT_NEAR(mean, want, 1e-13);
  crossentropy_backward<double>(probs.mat(N, V), targets, 1.0 / N);
  EXPECT_LT(max_gradient_error("crossentropy d logits", logits, probs.to_host(), loss), kTolerance);
}

TEST(Layers, CrossEntropyIsStableForLargeLogits) {
  const int N = 1, V = 3;
  Buf logits(N * V), losses(N);
  logits.host = {1000.0, 0.0, -1000.0};
  logits.to_device();
  double mean = crossentropy_forward<double>(logits.mat(N, V), losses.vec(), device_tokens({1}));
  EXPECT_NEAR(mean, 1000.0, 1e-9);  // finite although exp(-1000) underflows
}

// The float softmax (fast_exp, vectorized) against a double reference, over rows whose
// logits span more than 60 below the largest (those get probability 0) and more than
// 87.4 (past fast_exp's range): probabilities within 1e-6 of the exact ones, losses
// within 1e-5, and no subnormal left behind.
TEST(Layers, FloatCrossEntropyMatchesDouble) {
  const int N = 3, V = 1031;
  std::mt19937_64 rng(14);
  std::uniform_real_distribution<double> u(-100.0, 5.0);
  std::vector<double> logits(size_t(N) * V);
  for (double &l : logits)
    l = u(rng);
  DeviceBuffer<float> probs(logits.size()), losses(N);
  for (size_t i = 0; i < logits.size(); ++i)
    probs.host[i] = static_cast<float>(logits[i]);
  probs.to_device();
  const std::vector<int> target = {3, 500, 1030};
  crossentropy_forward<float>(probs.mat(N, V), losses.vec(), device_tokens(target));
  probs.to_host();
  losses.to_host();
  for (int n = 0; n < N; ++n) {
    const double *row = &logits[size_t(n) * V];
    double maxv = row[0], z = 0;
    for (int v = 0; v < V; ++v)
      maxv = std::max(maxv, double(static_cast<float>(row[v])));
    for (int v = 0; v < V; ++v)
      z += std::exp(double(static_cast<float>(row[v])) - maxv);
    for (int v = 0; v < V; ++v) {
      const float p = probs.host[size_t(n) * V + size_t(v)];
      EXPECT_NEAR(p, std::exp(double(static_cast<float>(row[v])) - maxv) / z, 1e-6)
          << n << "," << v;
      EXPECT_NE(std::fpclassify(p), FP_SUBNORMAL) << n << "," << v;
    }
    const double want = maxv + std::log(z) - double(static_cast<float>(row[target[size_t(n)]]));
    EXPECT_NEAR(losses.host[size_t(n)], want, 1e-5) << n;
  }
}

// Float GELU's exact form (BERT's) evaluates Phi without a library call
// (fast_normal_cdf.hpp). Over every 97th float in [-20, 20], against the double library,
// relative to the value itself (in the left tail too, where x Phi(x) is tiny, not merely
// next to zero) down to values of 1e-30 (x = -11.3; below, within 1e-30): on [-4, 20],
// where training's activations are, within 1.9e-6 (at -3.85; 15 float roundings there, the
// float square in the exponent's share), further left 4e-6 at x = -6 (Phi 1e-9) and 2e-5
// in the far tail (measured, 2026-12-05; glibc's erff is within an ulp). The
// derivative Phi(x) + x phi(x), which crosses zero at -0.75, relative to its terms'
// magnitudes Phi(x) + |x| phi(x).
TEST(Layers, FloatExactGeluMatchesDouble) {
  double worst = 0, worst_left = 0, worst_back = 0;
  float at = 0, at_back = 0;
  for (uint32_t bits = 0; bits <= std::bit_cast<uint32_t>(20.0f); bits += 97)
    for (const float sign : {1.0f, -1.0f}) {
      const float x = sign * std::bit_cast<float>(bits);
      const double xd = x, cdf = 0.5 * std::erfc(-xd / std::sqrt(2.0));
      const double pdf = std::exp(-0.5 * xd * xd) / std::sqrt(2.0 * M_PI);
      const double want = xd * cdf, want_back = cdf + xd * pdf;
      const double err = std::abs(gelu_erf(x) - want) / std::max(std::abs(want), 1e-30);
      const double err_back = std::abs(gelu_erf_backward(x, 1.0f) - want_back) /
                              std::max(cdf + std::abs(xd) * pdf, 1e-30);
      if (x < -4.0f)
        worst_left = std::max(worst_left, err);
      else if (err > worst)
        worst = err, at = x;
      if (err_back > worst_back) worst_back = err_back, at_back = x;
    }
  std::cout << "float gelu (erf): worst relative error " << worst << " at " << at << " (from -4), "
            << worst_left << " (-20 to -4); derivative " << worst_back << " at " << at_back << "\n";
  EXPECT_LT(worst, 3e-6);
  EXPECT_LT(worst_left, 1e-4);
  EXPECT_LT(worst_back, 1e-5);
}

TEST(Layers, ExactGeluGradientsAndValues) {
  const int N = 41;
  Buf inp(N), out(N), r(N);
  std::mt19937_64 rng(15);
  for (int i = 0; i < N; ++i)
    inp.host[static_cast<size_t>(i)] = -4.0 + 8.0 * i / (N - 1);
  inp.to_device();
  r.randomize(rng);
  auto loss = [&] {
    gelu_forward<double>(out.vec(), inp.cvec(), GeluForm::erf);
    return dot(r.host, out.to_host());
  };
  loss();
  for (int i = 0; i < N; ++i) {  // x Phi(x), Phi from the C library's erfc
    const double x = inp.host[static_cast<size_t>(i)];
    EXPECT_NEAR(out.host[static_cast<size_t>(i)], x * 0.5 * std::erfc(-x / std::sqrt(2.0)), 1e-15);
  }
  Buf dinp(N, kNaN);
  gelu_backward<double>(dinp.vec(), inp.cvec(), r.cvec(), GeluForm::erf);
  EXPECT_LT(max_gradient_error("gelu (erf) d inp", inp, dinp.to_host(), loss), kTolerance);
}

// Sequence lengths on the device, for the padding mask.
Kokkos::View<const int *, MemSpace> device_lengths(const std::vector<int> &lengths) {
  return device_tokens(lengths);
}

TEST(Layers, PaddedPlanarAttentionGradients) {
  AttentionShape s{3, 5, 2, 3};  // B, T, NH, hs
  s.mask = AttentionMask::padding;
  s.lengths = device_lengths({5, 2, 1});
  s.layout = QkvLayout::planar;
  const int BT = s.B * s.T, C = s.NH * s.hs;
  std::mt19937_64 rng(16);
  Buf qkv(3 * BT * C), out(BT * C), r(BT * C);
  Buf qkvp(3 * BT * C), att(s.B * s.NH * s.T * s.T), yp(BT * C);
  qkv.randomize(rng, 1.5);
  r.randomize(rng);
  auto loss = [&] {
    attention_forward<double>(out.mat(BT, C), qkvp.vec(), att.vec(), yp.vec(), qkv.cmat(3 * BT, C),
                              s);
    return dot(r.host, out.to_host());
  };
  loss();
  // Every row of sequence b, padded positions too, attends to exactly its first len(b) keys.
  const int len[] = {5, 2, 1};
  att.to_host();
  for (int row = 0; row < s.B * s.NH * s.T; ++row) {
    const int b = row / (s.NH * s.T);
    double sum = 0;
    for (int t2 = 0; t2 < s.T; ++t2) {
      const double a = att.host[static_cast<size_t>(row * s.T + t2)];
      if (t2 >= len[b]) {
        EXPECT_EQ(a, 0.0);
      } else {
        EXPECT_GT(a, 0.0);
      }
      sum += a;
    }
    EXPECT_NEAR(sum, 1.0, 1e-14);
  }
  Buf dqkv(3 * BT * C, kNaN), dqkvp(3 * BT * C, kNaN), datt(att.size(), kNaN), doutp(BT * C);
  attention_backward<double>(dqkv.mat(3 * BT, C), dqkvp.vec(), datt.vec(), doutp.vec(),
                             r.cmat(BT, C), qkvp.cvec(), att.cvec(), s);
  EXPECT_LT(max_gradient_error("attention (padding) d qkv", qkv, dqkv.to_host(), loss), kTolerance);
}

TEST(Layers, PaddedKeysDoNotReachRealPositions) {
  // Changing the keys and values of sequence 0's padding leaves its real positions' outputs
  // exactly as they were; a planar layout gives the interleaved one's result.
  AttentionShape s{1, 4, 2, 2};
  s.mask = AttentionMask::padding;
  s.lengths = device_lengths({3});
  const int BT = s.B * s.T, C = s.NH * s.hs;
  std::mt19937_64 rng(17);
  Buf qkv(BT * 3 * C), planar(3 * BT * C), out(BT * C), qkvp(3 * BT * C), att(s.NH * s.T * s.T),
      yp(BT * C);
  qkv.randomize(rng);
  for (int bt = 0; bt < BT; ++bt)
    for (int j = 0; j < 3 * C; ++j)
      planar.host[static_cast<size_t>((j / C) * BT * C + bt * C + j % C)] =
          qkv.host[static_cast<size_t>(bt * 3 * C + j)];
  planar.to_device();
  attention_forward<double>(out.mat(BT, C), qkvp.vec(), att.vec(), yp.vec(), qkv.cmat(BT, 3 * C),
                            s);
  std::vector<double> before = out.to_host();
  AttentionShape sp = s;
  sp.layout = QkvLayout::planar;
  attention_forward<double>(out.mat(BT, C), qkvp.vec(), att.vec(), yp.vec(), planar.cmat(3 * BT, C),
                            sp);
  EXPECT_EQ(out.to_host(), before);
  for (int j = C; j < 3 * C; ++j)  // the last position's key and value
    qkv.host[static_cast<size_t>((BT - 1) * 3 * C + j)] += 1.0;
  qkv.to_device();
  attention_forward<double>(out.mat(BT, C), qkvp.vec(), att.vec(), yp.vec(), qkv.cmat(BT, 3 * C),
                            s);
  out.to_host();
  for (int i = 0; i < BT * C; ++i)
    EXPECT_EQ(out.host[static_cast<size_t>(i)], before[static_cast<size_t>(i)]) << i;
}

TEST(Layers, EmbeddingGradients) {
  const int R = 3, C = 4, N = 6;
  std::mt19937_64 rng(18);
  Buf table(R * C), out(N * C), base(N * C), r(N * C);
  table.randomize(rng);
  base.randomize(rng);
  r.randomize(rng);
  auto ids = device_tokens({0, 2, 2, 0, 0, 2});  // row 1 never named
  auto loss = [&] {
    Kokkos::deep_copy(out.device, base.device);
    embedding_forward<double>(out.mat(N, C), ids, table.cmat(R, C), 1.0);
    return dot(r.host, out.to_host());
  };
  loss();
  for (int c = 0; c < C; ++c)
    EXPECT_EQ(out.host[static_cast<size_t>(C + c)],
              base.host[static_cast<size_t>(C + c)] + table.host[static_cast<size_t>(2 * C + c)]);
  Buf dtable(R * C, kNaN);
  embedding_backward<double>(dtable.mat(R, C), r.cmat(N, C), ids, 0.0);
  EXPECT_LT(max_gradient_error("embedding d table", table, dtable.to_host(), loss), kTolerance);
  for (int c = 0; c < C; ++c)
    EXPECT_EQ(dtable.host[static_cast<size_t>(C + c)], 0.0);
  // Accumulating: a second backward with beta 1 doubles it (up to rounding).
  std::vector<double> once = dtable.host;
  embedding_backward<double>(dtable.mat(R, C), r.cmat(N, C), ids, 1.0);
  dtable.to_host();
  for (size_t i = 0; i < once.size(); ++i)
    EXPECT_NEAR(dtable.host[i], 2 * once[i], 1e-12);
}

TEST(Layers, TanhGradients) {
  const int N = 21;
  Buf inp(N), out(N), r(N);
  std::mt19937_64 rng(19);
  inp.randomize(rng, 3.0);
  r.randomize(rng);
  auto loss = [&] {
    tanh_forward<double>(out.vec(), inp.cvec());
    return dot(r.host, out.to_host());
  };
  loss();
  for (int i = 0; i < N; ++i)
    EXPECT_EQ(out.host[static_cast<size_t>(i)], std::tanh(inp.host[static_cast<size_t>(i)]));
  Buf dinp(N, kNaN);
  tanh_backward<double>(dinp.vec(), out.cvec(), r.cvec());
  EXPECT_LT(max_gradient_error("tanh d inp", inp, dinp.to_host(), loss), kTolerance);
}

TEST(Layers, GatheredRowsScatterTheirGradientsBack) {
  const int N = 5, C = 3, P = 2;
  std::mt19937_64 rng(20);
  Buf inp(N * C), out(P * C), r(P * C);
  inp.randomize(rng);
  r.randomize(rng);
  auto rows = device_tokens({4, 1});
  auto loss = [&] {
    gather_rows<double>(out.mat(P, C), inp.cmat(N, C), rows);
    return dot(r.host, out.to_host());
  };
  loss();
  for (int c = 0; c < C; ++c) {
    EXPECT_EQ(out.host[static_cast<size_t>(c)], inp.host[static_cast<size_t>(4 * C + c)]);
    EXPECT_EQ(out.host[static_cast<size_t>(C + c)], inp.host[static_cast<size_t>(C + c)]);
  }
  Buf dinp(N * C, 0.0);
  scatter_add_rows<double>(dinp.mat(N, C), r.cmat(P, C), rows);
  EXPECT_LT(max_gradient_error("gather_rows d inp", inp, dinp.to_host(), loss), kTolerance);
}

TEST(Layers, CrossEntropyCountsCorrectRows) {
  const int N = 3, V = 4;
  Buf scores(N * V);
  scores.host = {0.1, 0.7, 0.2, 0.0, /**/ 0.5, 0.5, 0.0, 0.0, /**/ 0.0, 0.0, 0.0, 0.9};
  scores.to_device();
  // Row 0 right (1), row 1 a tie that argmax resolves to 0 (target 1: wrong), row 2 right.
  EXPECT_EQ(crossentropy_correct<double>(scores.cmat(N, V), device_tokens({1, 1, 3})), 2);
}

TEST(Layers, FloatCrossEntropyCountsWhatTheScalarArgmaxFinds) {
  // The host's vector loop (host_loops::first_max_index) against the scalar argmax, one row
  // at a time (each row's target is the scalar's answer, or one past it): ties of the
  // largest value, signed zeros, infinities, NaNs first and elsewhere, lengths that are
  // and are not whole vectors.
  using FBuf = DeviceBuffer<float>;
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  std::mt19937_64 rng(13);
  std::vector<std::vector<float>> rows;
  for (const int V : {1, 2, 15, 16, 17, 33, 30522}) {
    std::vector<float> row(static_cast<size_t>(V));
    std::uniform_real_distribution<float> u(-5.0f, 5.0f);
    for (float &v : row)
      v = u(rng);
    rows.push_back(row);
    std::vector<float> tie = row;  // the largest twice, the later one in another lane
    tie[tie.size() - 1] = 9.0f;
    tie[tie.size() / 3] = 9.0f;
    rows.push_back(tie);
    std::vector<float> zeros(row.size(), -1.0f);  // -0 before +0: the first wins
    zeros[zeros.size() / 2] = -0.0f;
    zeros[zeros.size() - 1] = 0.0f;
    rows.push_back(zeros);
    std::vector<float> nans = row;  // NaNs never win, except at index 0
    for (size_t i = 1; i < nans.size(); i += 3)
      nans[i] = nan;
    rows.push_back(nans);
    nans[0] = nan;
    rows.push_back(nans);
    std::vector<float> low(row.size(), -inf);  // nothing above -inf: index 0
    rows.push_back(low);
    low[low.size() - 1] = inf;
    rows.push_back(low);
  }
  for (const std::vector<float> &row : rows) {
    const int V = static_cast<int>(row.size());
    int best = 0;
    for (int v = 1; v < V; ++v)
      if (row[size_t(v)] > row[size_t(best)]) best = v;
    FBuf scores(row.size());
    scores.host = row;
    scores.to_device();
    EXPECT_EQ(crossentropy_correct<float>(scores.cmat(1, V), device_tokens({best})), 1)
        << V << " scores, the scalar's answer " << best;
    EXPECT_EQ(crossentropy_correct<float>(scores.cmat(1, V), device_tokens({best + 1})), 0)
        << V << " scores, the scalar's answer " << best;
  }
}

TEST(Layers, LayerNormTakesItsEpsilon) {
  // A constant row has variance 0: rstd is 1/sqrt(eps) exactly as given.
  const int N = 1, C = 8;
  Buf inp(N * C, 3.0), w(C, 1.0), b(C, 0.0), out(N * C), mean(N), rstd(N);
  layernorm_forward<double>(out.mat(N, C), mean.vec(), rstd.vec(), inp.cmat(N, C), w.cvec(),
                            b.cvec(), 1e-12);
  EXPECT_DOUBLE_EQ(rstd.to_host()[0], 1e6);
}

}  // namespace
}  // namespace zrt::nn::test
