// The ZeRO engine end to end: a small MLP trained through every stage, dtype and optimizer,
// against a float64 serial reference, bitwise across stages in deterministic mode, and the
// memory report against the ZeRO paper's formulas. Runs at np 1, 2 and 4.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/device_copy.hpp"
#include "support/mpi_fixture.hpp"
#include "support/values.hpp"

namespace {

// --- the model ---------------------------------------------------------------------------

constexpr int kIn = 13, kHidden = 29, kOut = 7, kBatch = 4;

double uniform(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b << 21) ^ (c << 42) ^ 0x1234567ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return std::ldexp(static_cast<double>(x >> 11), -52) - 1.0;  // [-1, 1)
}

// Parameters in registration order: W1 [H, In], b1 [H], W2 [Out, H], b2 [Out].
const std::vector<std::vector<int64_t>> kShapes = {
    {kHidden, kIn}, {kHidden}, {kOut, kHidden}, {kOut}};
const char *kNames[] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};

size_t numel(const std::vector<int64_t> &s) {
  size_t n = 1;
  for (auto d : s)
    n *= static_cast<size_t>(d);
  return n;
}

std::vector<std::vector<float>> initial_params() {
  std::vector<std::vector<float>> p;
  for (size_t t = 0; t < kShapes.size(); ++t) {
    std::vector<float> v(numel(kShapes[t]));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<float>(0.3 * uniform(7, t, i));
    p.push_back(v);
  }
  return p;
}

// Loss and gradients of rank `rank`'s batch at `step`, in T.
template <class T>
std::vector<std::vector<T>> mlp_grads(const std::vector<std::vector<T>> &p, int rank, int step,
                                      int micro = 0) {
  const T *w1 = p[0].data(), *b1 = p[1].data(), *w2 = p[2].data(), *b2 = p[3].data();
  std::vector<std::vector<T>> g = {std::vector<T>(p[0].size()), std::vector<T>(p[1].size()),
                                   std::vector<T>(p[2].size()), std::vector<T>(p[3].size())};
  for (int b = 0; b < kBatch; ++b) {
    uint64_t sample = static_cast<uint64_t>(((step * 8 + micro) * 64 + rank) * kBatch + b);
    T x[kIn], target[kOut], h[kHidden], y[kOut], dy[kOut], dh[kHidden];
    for (int i = 0; i < kIn; ++i)
      x[i] = static_cast<T>(uniform(1, sample, static_cast<uint64_t>(i)));
    for (int o = 0; o < kOut; ++o)
      target[o] = static_cast<T>(uniform(2, sample, static_cast<uint64_t>(o)));
    for (int j = 0; j < kHidden; ++j) {
      T s = b1[j];
      for (int i = 0; i < kIn; ++i)
        s += w1[j * kIn + i] * x[i];
      h[j] = std::tanh(s);
    }
    for (int o = 0; o < kOut; ++o) {
      T s = b2[o];
      for (int j = 0; j < kHidden; ++j)
        s += w2[o * kHidden + j] * h[j];
      y[o] = s;
      dy[o] = (y[o] - target[o]) / static_cast<T>(kBatch);
    }
    for (int j = 0; j < kHidden; ++j) {
      T s = 0;
      for (int o = 0; o < kOut; ++o)
        s += w2[o * kHidden + j] * dy[o];
      dh[j] = s * (1 - h[j] * h[j]);
    }
    for (int o = 0; o < kOut; ++o) {
      g[3][o] += dy[o];
      for (int j = 0; j < kHidden; ++j)
        g[2][o * kHidden + j] += dy[o] * h[j];
    }
    for (int j = 0; j < kHidden; ++j) {
      g[1][j] += dh[j];
      for (int i = 0; i < kIn; ++i)
        g[0][j * kIn + i] += dh[j] * x[i];
    }
  }
  return g;
}

using test::add;
using test::load;

// --- one training run ------------------------------------------------------------------------

struct RunSpec {
  int stage = 2;
  zrt_dtype_t dtype = ZRT_DTYPE_FP32;
  zrt_optimizer_t optimizer = ZRT_OPTIMIZER_ADAMW;
  bool deterministic = false;
  size_t bucket_bytes = 512;  // several buckets for this small model
  int steps = 20;
  double lr = 1e-3, weight_decay = 0.01, momentum = 0, clip = 0;
  int accumulation = 1;
  bool overlap = true, offload = false;
  bool shuffle_ready = false;  // each rank makes gradients ready in its own order
  double loss_scale = 0;
  size_t max_live = 1000000000;  // stage 3: 0 evicts every released bucket
  bool no_bias_decay = false;    // biases get weight decay 0 (zrt_param_set_weight_decay)
  zrt_engine_memory_t memory = ZRT_ENGINE_MEMORY_HOST;
  int shared = 1;  // node-shared buffers where the backend has them (engine.shared_buffers)
  const char *settings = nullptr;  // the engine's params->settings (JSON), if any
  int nan_step = -1;               // at this step rank 0's last micro-step has a NaN gradient
  int lr_step = -1;    // at this step the program halves the rate in the middle of backward
  int peek_step = -1;  // at this step the program reads a parameter between backward and step
  // How backward asks for its gradient buffers: 0 zrt_param_grad_data (and adds), 1
  // zrt_param_grad_buffer (and overwrites where it says so), 2 the two by turns.
  int grad_write = 0;
  // This parameter's gradient the program does not write at even steps: with grad_write 0
  // it asks for the buffer and leaves it, otherwise it makes the gradient ready without
  // asking (at odd steps it writes it into the buffer the next step reuses).
  int unwritten = -1;
};

struct Result {
  std::vector<std::vector<float>> params;
  std::vector<zrt_step_report_t> reports;        // of each step's last micro-step
  std::vector<zrt_step_report_t> micro_reports;  // of every zrt_engine_step call
  zrt_memory_report_t memory{};
  nlohmann::json describe;    // zrt_engine_describe at the end
  std::vector<float> peeked;  // RunSpec::peek_step's read
};

zrt_engine_params_t engine_params(const RunSpec &r) {
  zrt_engine_params_t p = {};
  p.field_mask =
      ZRT_ENGINE_PARAM_FIELD_STAGE | ZRT_ENGINE_PARAM_FIELD_COMPUTE_DTYPE |
      ZRT_ENGINE_PARAM_FIELD_OPTIMIZER | ZRT_ENGINE_PARAM_FIELD_LR |
      ZRT_ENGINE_PARAM_FIELD_WEIGHT_DECAY | ZRT_ENGINE_PARAM_FIELD_DETERMINISTIC |
      ZRT_ENGINE_PARAM_FIELD_REDUCE_BUCKET_BYTES | ZRT_ENGINE_PARAM_FIELD_ALLGATHER_BUCKET_BYTES |
      ZRT_ENGINE_PARAM_FIELD_GRADIENT_CLIPPING |
      ZRT_ENGINE_PARAM_FIELD_GRADIENT_ACCUMULATION_STEPS | ZRT_ENGINE_PARAM_FIELD_OVERLAP |
      ZRT_ENGINE_PARAM_FIELD_OFFLOAD_OPTIMIZER | ZRT_ENGINE_PARAM_FIELD_MOMENTUM |
      ZRT_ENGINE_PARAM_FIELD_LOSS_SCALE | ZRT_ENGINE_PARAM_FIELD_MAX_LIVE_PARAMETERS |
      ZRT_ENGINE_PARAM_FIELD_MEMORY_SPACE | ZRT_ENGINE_PARAM_FIELD_SHARED_BUFFERS;
  p.stage = r.stage;
  p.compute_dtype = r.dtype;
  p.optimizer = r.optimizer;
  p.lr = r.lr;
  p.weight_decay = r.weight_decay;
  p.momentum = r.momentum;
  p.deterministic = r.deterministic;
  p.reduce_bucket_bytes = r.bucket_bytes;
  p.allgather_bucket_bytes = r.bucket_bytes;
  p.gradient_clipping = r.clip;
  p.gradient_accumulation_steps = r.accumulation;
  p.overlap = r.overlap;
  p.offload_optimizer = r.offload;
  p.loss_scale = r.loss_scale;
  p.max_live_parameters = r.max_live;
  p.memory_space = r.memory;
  p.shared_buffers = r.shared;
  if (r.settings != nullptr) {
    p.field_mask |= ZRT_ENGINE_PARAM_FIELD_SETTINGS;
    p.settings = r.settings;
  }
  return p;
}

// zrt_engine_describe's JSON.
nlohmann::json describe_engine(zrt_engine_h e) {
  size_t length = 0;
  EXPECT_EQ(zrt_engine_describe(e, nullptr, 0, &length), ZRT_SUCCESS) << test::last_error();
  std::string text(length + 1, '\0');
  EXPECT_EQ(zrt_engine_describe(e, text.data(), text.size(), &length), ZRT_SUCCESS);
  text.resize(length);
  return nlohmann::json::parse(text, nullptr, false);
}

void train(const RunSpec &run, Result *out) {
  zrt_engine_params_t ep = engine_params(run);
  zrt_engine_h e = nullptr;
  CHECK_OK(zrt_engine_create(test::context(), &ep, &e));
  std::vector<zrt_param_h> h(kShapes.size());
  for (size_t t = 0; t < kShapes.size(); ++t)
    CHECK_OK(zrt_param_register(e, kNames[t], run.dtype, static_cast<int>(kShapes[t].size()),
                                kShapes[t].data(), &h[t]));
  if (run.no_bias_decay) {
    for (size_t t : {size_t{1}, size_t{3}})
      CHECK_OK(zrt_param_set_weight_decay(e, h[t], 0.0));
  }
  CHECK_OK(zrt_engine_commit(e));
  auto init = initial_params();
  for (size_t t = 0; t < h.size(); ++t)
    CHECK_OK(zrt_param_set(e, h[t], init[t].data(), ZRT_DTYPE_FP32));

  std::mt19937 order_rng(static_cast<unsigned>(test::rank() + 1));
  for (int step = 0; step < run.steps; ++step) {
    for (int micro = 0; micro < run.accumulation; ++micro) {
      // Forward and backward read the parameters in the compute dtype.
      // On the device the test reads and writes the engine's buffers through copies, as a
      // program's kernels would use them in place.
      const bool device = run.memory == ZRT_ENGINE_MEMORY_DEVICE;
      const size_t esize = run.dtype == ZRT_DTYPE_FP32 ? 4 : 2;
      std::vector<char> staging;
      std::vector<std::vector<float>> p(h.size());
      for (size_t t = 0; t < h.size(); ++t) {
        CHECK_OK(zrt_param_gather(e, h[t]));
        void *data = nullptr;
        CHECK_OK(zrt_param_data(e, h[t], &data));
        p[t].resize(numel(kShapes[t]));
        if (device) {
          staging.resize(p[t].size() * esize);
          test::device_copy(staging.data(), data, staging.size());
          data = staging.data();
        }
        for (size_t i = 0; i < p[t].size(); ++i)
          p[t][i] = load(data, i, run.dtype);
      }
      auto g = mlp_grads<float>(p, test::rank(), step, micro);
      if (step == run.nan_step && micro + 1 == run.accumulation && test::rank() == 0)
        g[1][0] = std::numeric_limits<float>::quiet_NaN();
      double scale = 1;
      CHECK_OK(zrt_engine_loss_scale(e, &scale));
      std::vector<size_t> order = {3, 2, 1, 0};  // backward order
      if (run.shuffle_ready) std::shuffle(order.begin(), order.end(), order_rng);
      for (size_t t : order) {
        const bool unwritten = static_cast<int>(t) == run.unwritten && step % 2 == 0;
        if (unwritten && run.grad_write != 0) {
          CHECK_OK(zrt_param_grad_ready(e, h[t]));
          continue;
        }
        void *grad = nullptr;
        zrt_grad_write_t write = ZRT_GRAD_WRITE_ADD;
        if (run.grad_write == 1 || (run.grad_write == 2 && t % 2 == 0))
          CHECK_OK(zrt_param_grad_buffer(e, h[t], &grad, &write));
        else
          CHECK_OK(zrt_param_grad_data(e, h[t], &grad));
        void *where = grad;
        if (device) {
          staging.resize(g[t].size() * esize);
          test::device_copy(staging.data(), grad, staging.size());
          where = staging.data();
        }
        // Overwritten: whatever the buffer held (NaNs here) must not matter.
        if (write == ZRT_GRAD_WRITE_OVERWRITE) std::memset(where, 0xff, g[t].size() * esize);
        for (size_t i = 0; i < g[t].size() && !unwritten; ++i) {
          if (write == ZRT_GRAD_WRITE_OVERWRITE)
            std::memset(static_cast<char *>(where) + i * esize, 0, esize);
          add(where, i, run.dtype, static_cast<float>(g[t][i] * scale));
        }
        if (device) test::device_copy(grad, staging.data(), staging.size());
        CHECK_OK(zrt_param_grad_ready(e, h[t]));
        if (step == run.lr_step && micro + 1 == run.accumulation && t == order[0]) {
          CHECK_OK(zrt_engine_set_lr(e, run.lr / 2));
        }
      }
      for (size_t t = 0; t < h.size(); ++t)
        CHECK_OK(zrt_param_release(e, h[t]));
      if (step == run.peek_step && micro + 1 == run.accumulation) {
        out->peeked.resize(numel(kShapes[0]));
        CHECK_OK(zrt_param_get(e, h[0], out->peeked.data(), ZRT_DTYPE_FP32));
      }
      zrt_step_report_t report{};
      report.field_mask = ZRT_STEP_REPORT_FIELD_ALL;
      CHECK_OK(zrt_engine_step(e, &report));
      if (micro + 1 == run.accumulation) out->reports.push_back(report);
      out->micro_reports.push_back(report);
    }
  }
  out->memory.field_mask = ZRT_MEMORY_REPORT_FIELD_ALL;
  CHECK_OK(zrt_engine_memory(e, &out->memory));
  out->describe = describe_engine(e);
  out->params.resize(h.size());
  for (size_t t = 0; t < h.size(); ++t) {
    out->params[t].resize(numel(kShapes[t]));
    CHECK_OK(zrt_param_get(e, h[t], out->params[t].data(), ZRT_DTYPE_FP32));
  }
  CHECK_OK(zrt_engine_destroy(e));
}

// The same training, serially in float64: every rank's batch, gradients averaged.
std::vector<std::vector<double>> reference(const RunSpec &run) {
  std::vector<std::vector<double>> w;
  for (auto &v : initial_params())
    w.emplace_back(v.begin(), v.end());
  std::vector<std::vector<double>> m = w, v = w;
  for (auto &x : m)
    std::fill(x.begin(), x.end(), 0.0);
  for (auto &x : v)
    std::fill(x.begin(), x.end(), 0.0);
  const int n = test::size();
  for (int step = 0; step < run.steps; ++step) {
    std::vector<std::vector<double>> g = w;
    for (auto &x : g)
      std::fill(x.begin(), x.end(), 0.0);
    for (int r = 0; r < n; ++r)
      for (int micro = 0; micro < run.accumulation; ++micro) {
        auto gr = mlp_grads<double>(w, r, step, micro);
        for (size_t t = 0; t < g.size(); ++t)
          for (size_t i = 0; i < g[t].size(); ++i)
            g[t][i] += gr[t][i] / (n * run.accumulation);
      }
    double norm = 0;
    for (auto &x : g)
      for (double y : x)
        norm += y * y;
    norm = std::sqrt(norm);
    double clip = run.clip > 0 && norm > run.clip ? run.clip / (norm + 1e-6) : 1;
    const double t1 = step + 1, bc1 = 1 - std::pow(0.9, t1), bc2 = 1 - std::pow(0.999, t1);
    if (run.optimizer == ZRT_OPTIMIZER_LAMB) {
      // Adam's direction plus the decay, scaled per tensor by |w| / |u| in [0.01, 10].
      for (size_t t = 0; t < w.size(); ++t) {
        const bool bias = t == 1 || t == 3;
        const double decay = run.no_bias_decay && bias ? 0.0 : run.weight_decay;
        std::vector<double> u(w[t].size());
        double w_sq = 0, u_sq = 0;
        for (size_t i = 0; i < w[t].size(); ++i) {
          const double gi = g[t][i] * clip;
          m[t][i] = 0.9 * m[t][i] + 0.1 * gi;
          v[t][i] = 0.999 * v[t][i] + 0.001 * gi * gi;
          u[i] = m[t][i] / bc1 / (std::sqrt(v[t][i]) / std::sqrt(bc2) + 1e-8) + decay * w[t][i];
          w_sq += w[t][i] * w[t][i];
          u_sq += u[i] * u[i];
        }
        const double trust =
            w_sq > 0 && u_sq > 0 ? std::clamp(std::sqrt(w_sq / u_sq), 0.01, 10.0) : 1.0;
        for (size_t i = 0; i < w[t].size(); ++i)
          w[t][i] -= run.lr * trust * u[i];
      }
      continue;
    }
    for (size_t t = 0; t < w.size(); ++t)
      for (size_t i = 0; i < w[t].size(); ++i) {
        double gi = g[t][i] * clip;
        if (run.optimizer == ZRT_OPTIMIZER_SGD) {
          m[t][i] = run.momentum * m[t][i] + gi;
          w[t][i] -= run.lr * m[t][i];
          continue;
        }
        m[t][i] = 0.9 * m[t][i] + 0.1 * gi;
        v[t][i] = 0.999 * v[t][i] + 0.001 * gi * gi;
        bool bias = t == 1 || t == 3;
        w[t][i] *= 1 - run.lr * (run.no_bias_decay && bias ? 0.0 : run.weight_decay);
        w[t][i] -= run.lr / bc1 * m[t][i] / (std::sqrt(v[t][i]) / std::sqrt(bc2) + 1e-8);
      }
  }
  return w;
}

// Largest norm-wise relative difference over the tensors.
double relative_error(const std::vector<std::vector<float>> &a,
                      const std::vector<std::vector<double>> &b) {
  double worst = 0;
  for (size_t t = 0; t < a.size(); ++t) {
    double d = 0, s = 0;
    for (size_t i = 0; i < a[t].size(); ++i) {
      d += (a[t][i] - b[t][i]) * (a[t][i] - b[t][i]);
      s += b[t][i] * b[t][i];
    }
    worst = std::max(worst, std::sqrt(d / s));
  }
  return worst;
}

bool bitwise_equal(const Result &a, const Result &b) {
  for (size_t t = 0; t < a.params.size(); ++t)
    if (std::memcmp(a.params[t].data(), b.params[t].data(), a.params[t].size() * 4) != 0)
      return false;
  return true;
}

}  // namespace

// LAMB too: each tensor's trust ratio from its norms over all its pieces, the slices of
// every bucket it spans on every rank (these 512-byte buckets cut every weight matrix).
// Until 2026-12-06 a rank kept only the last of its pieces' sums: 4.3e-4 off after 20 steps.
TEST(Engine, Fp32EveryStageMatchesAFloat64Reference) {
  for (zrt_optimizer_t opt : {ZRT_OPTIMIZER_ADAMW, ZRT_OPTIMIZER_SGD, ZRT_OPTIMIZER_LAMB}) {
    RunSpec run;
    run.optimizer = opt;
    if (getenv("HACK_STEPS")) run.steps = atoi(getenv("HACK_STEPS"));
    if (opt == ZRT_OPTIMIZER_SGD) {
      run.lr = 0.05;
      run.momentum = 0.9;
      run.weight_decay = 0;
    }
    auto ref = reference(run);
    for (int stage = 0; stage <= 3; ++stage) {
      run.stage = stage;
      SCOPED_TRACE(fmt::format("stage {} optimizer {}", stage, static_cast<int>(opt)));
      Result res;
      train(run, &res);
      ASSERT_EQ(res.params.size(), 4u);
      double err = relative_error(res.params, ref);
      EXPECT_LT(err, 1e-6) << "relative error " << err;
      EXPECT_EQ(res.reports.back().step, run.steps);
    }
  }
}

TEST(Engine, PerParameterWeightDecay) {
  RunSpec run;
  run.weight_decay = 0.1;
  run.no_bias_decay = true;
  auto ref = reference(run);
  std::vector<Result> results(4);
  for (int stage = 0; stage <= 3; ++stage) {
    run.stage = stage;
    train(run, &results[static_cast<size_t>(stage)]);
    EXPECT_LT(relative_error(results[static_cast<size_t>(stage)].params, ref), 1e-6)
        << "stage " << stage;
  }
  // And it matters: the same run with decay everywhere ends elsewhere.
  run.no_bias_decay = false;
  Result everywhere;
  train(run, &everywhere);
  EXPECT_FALSE(bitwise_equal(results[3], everywhere));
}

TEST(Engine, DeterministicStagesAreBitwiseEqual) {
  for (zrt_dtype_t dt : {ZRT_DTYPE_FP32, ZRT_DTYPE_BF16}) {
    for (zrt_optimizer_t opt : {ZRT_OPTIMIZER_ADAMW, ZRT_OPTIMIZER_LAMB, ZRT_OPTIMIZER_SGD}) {
      RunSpec run;
      run.dtype = dt;
      run.optimizer = opt;
      run.deterministic = true;
      run.steps = 10;
      run.clip = 0.5;  // exercise the global norm too
      run.momentum = opt == ZRT_OPTIMIZER_SGD ? 0.9 : 0;
      if (opt == ZRT_OPTIMIZER_SGD) run.weight_decay = 0;
      std::vector<Result> results(4);
      for (int stage = 0; stage <= 3; ++stage) {
        run.stage = stage;
        train(run, &results[static_cast<size_t>(stage)]);
      }
      Result again;
      run.stage = 2;
      train(run, &again);
      for (int stage = 1; stage <= 3; ++stage)
        EXPECT_TRUE(bitwise_equal(results[0], results[static_cast<size_t>(stage)]))
            << "dtype " << dt << " optimizer " << opt << ": stage " << stage
            << " differs from stage 0";
      EXPECT_TRUE(bitwise_equal(results[2], again)) << "run after run";
      for (int stage = 0; stage <= 3; ++stage)
        EXPECT_EQ(results[static_cast<size_t>(stage)].reports.back().grad_norm,
                  results[0].reports.back().grad_norm);
    }
  }
}

// zrt_param_grad_buffer: at stages 2-3 the engine hands out bucket buffers it has not zeroed
// and backward overwrites them; at stages 0-1 it adds. Either way, and mixed with
// zrt_param_grad_data in one bucket (4 KiB buckets hold the whole model), the results are
// the bits of adding into zeros: the buckets' padding, which no parameter covers and a
// buffer's earlier group may have written, is zeroed still, and so is the gradient of a
// parameter made ready without asking for its buffer (fc2.bias, made ready first, at even
// steps).
TEST(Engine, OverwrittenGradientBuffersGiveTheBitsOfAddedOnes) {
  for (int stage = 0; stage <= 3; ++stage)
    for (auto [accumulation, bucket_bytes, unwritten] :
         {std::tuple{1, 512, -1}, {2, 512, -1}, {1, 4096, -1}, {2, 4096, 3}, {1, 512, 3}}) {
      SCOPED_TRACE(fmt::format("stage {} accumulation {} buckets of {} bytes, unwritten {}", stage,
                               accumulation, bucket_bytes, unwritten));
      RunSpec run;
      run.stage = stage;
      run.accumulation = accumulation;
      run.bucket_bytes = static_cast<size_t>(bucket_bytes);
      run.unwritten = unwritten;
      run.deterministic = true;
      run.steps = 4;
      run.clip = 0.5;                     // the norm reads the padding too
      run.shuffle_ready = unwritten < 0;  // else fc2.bias first, before its bucket is taken
      Result added;
      train(run, &added);
      for (int mode : {1, 2}) {
        run.grad_write = mode;
        Result written;
        train(run, &written);
        EXPECT_TRUE(bitwise_equal(added, written)) << "grad_write " << mode;
        for (size_t k = 0; k < added.reports.size(); ++k)
          EXPECT_EQ(added.reports[k].grad_norm, written.reports[k].grad_norm) << "step " << k;
      }
    }
}

// fc1.weight (377 elements) and fc2.weight (203) are larger than the 128-element buckets:
// each is cut into buckets of its own, reduced piece by piece. The results match the
// reference at every stage (above); here, the gradient buffers follow the bucket size: two
// small buckets' worth plus one buffer for the largest tensor, where a bucket per tensor
// would take two of the largest tensor's size.
TEST(Engine, TensorsLargerThanABucketSpanSeveral) {
  RunSpec run;
  run.steps = 2;
  const size_t largest = numel(kShapes[0]) * 4;  // fc1.weight, fp32
  ASSERT_GT(largest, run.bucket_bytes);
  for (int stage : {2, 3}) {
    run.stage = stage;
    Result res;
    train(run, &res);
    if (stage == 2) {
      // Padding: fc1.weight's last piece, to 64 elements at most (4 ranks x kAlign).
      EXPECT_LE(res.memory.buckets, static_cast<int64_t>(2 * run.bucket_bytes + largest + 256));
      EXPECT_LT(res.memory.buckets, static_cast<int64_t>(2 * largest));
    }
    EXPECT_LT(relative_error(res.params, reference(run)), 1e-6) << "stage " << stage;
  }
}

TEST(Engine, Bf16TrainsCloseToTheReference) {
  RunSpec run;
  run.dtype = ZRT_DTYPE_BF16;
  run.steps = 10;
  auto ref = reference(run);
  for (int stage : {0, 2, 3}) {
    run.stage = stage;
    Result res;
    train(run, &res);
    // bf16 forward/backward and gradients: the fp32 master weights drift by about the
    // bf16 unit roundoff times the update size.
    EXPECT_LT(relative_error(res.params, ref), 2e-3) << "stage " << stage;
  }
}

TEST(Engine, ClippingUsesTheGlobalNormOfAllShards) {
  RunSpec run;
  run.optimizer = ZRT_OPTIMIZER_SGD;
  run.lr = 0.1;
  run.weight_decay = 0;
  run.steps = 1;
  run.clip = 0.05;
  // The serial norm of the averaged gradient at the initial weights.
  std::vector<std::vector<double>> w;
  for (auto &v : initial_params())
    w.emplace_back(v.begin(), v.end());
  double norm = 0;
  std::vector<std::vector<double>> g = w;
  for (auto &x : g)
    std::fill(x.begin(), x.end(), 0.0);
  for (int r = 0; r < test::size(); ++r) {
    auto gr = mlp_grads<double>(w, r, 0);
    for (size_t t = 0; t < g.size(); ++t)
      for (size_t i = 0; i < g[t].size(); ++i)
        g[t][i] += gr[t][i] / test::size();
  }
  for (auto &x : g)
    for (double y : x)
      norm += y * y;
  norm = std::sqrt(norm);
  ASSERT_GT(norm, run.clip) << "the test needs a gradient to clip";
  auto ref = reference(run);
  for (int stage = 0; stage <= 3; ++stage) {
    run.stage = stage;
    Result res;
    train(run, &res);
    EXPECT_NEAR(res.reports[0].grad_norm, norm, 1e-6 * norm) << "stage " << stage;
    EXPECT_LT(relative_error(res.params, ref), 1e-6) << "stage " << stage;
  }
}

TEST(Engine, GradientAccumulationAndNoOverlapAndShuffledReadyOrder) {
  RunSpec run;
  run.accumulation = 3;
  run.steps = 4;
  run.shuffle_ready = true;
  auto ref = reference(run);
  for (int stage = 0; stage <= 3; ++stage)
    for (bool overlap : {true, false}) {
      run.stage = stage;
      run.overlap = overlap;
      Result res;
      train(run, &res);
      EXPECT_LT(relative_error(res.params, ref), 1e-6)
          << "stage " << stage << " overlap " << overlap;
      EXPECT_EQ(res.reports.size(), 4u);
      EXPECT_TRUE(res.reports.back().applied);
    }
}

TEST(Engine, Stage3EvictionAndRegatherKeepResultsExact) {
  RunSpec run;
  run.stage = 3;
  run.deterministic = true;
  run.steps = 6;
  Result cached, evicting;
  train(run, &cached);
  run.max_live = 0;  // every release frees its bucket: every gather communicates
  train(run, &evicting);
  EXPECT_TRUE(bitwise_equal(cached, evicting));
  // The limit took effect (the params struct's max_live_parameters was once ignored): with
  // room for everything nothing is evicted; with none, every released group goes.
  EXPECT_EQ(cached.memory.gather_evictions, 0u);
  EXPECT_GT(evicting.memory.gather_evictions, 0u);
  EXPECT_GE(evicting.memory.gather_fetches, cached.memory.gather_fetches);
  EXPECT_GT(cached.memory.gather_fetches, 0u);
}

// What each zrt_engine_step says the engine's collectives did since the previous one: the
// kinds and bytes its stage implies, every micro-step on its own, and a wait that is there
// when nothing overlaps.
TEST(Engine, StepReportsTheCommunicationOfEachMicroStep) {
  if (test::size() < 2) GTEST_SKIP() << "one rank communicates nothing";
  for (int stage : {0, 1, 2, 3})
    for (bool overlap : {true, false}) {
      SCOPED_TRACE(fmt::format("stage {} overlap {}", stage, overlap));
      RunSpec run;
      run.stage = stage;
      run.steps = 3;
      run.accumulation = 2;
      run.overlap = overlap;
      Result r;
      train(run, &r);
      // The full (padded) parameter buffer: what every reduction and gather covers once.
      const int64_t full = stage == 3 ? r.memory.parameters * test::size() : r.memory.parameters;
      ASSERT_GT(full, 0);
      ASSERT_EQ(r.micro_reports.size(), 6u);
      for (size_t k = 0; k < r.micro_reports.size(); ++k) {
        const zrt_step_report_t &m = r.micro_reports[k];
        const bool last = k % 2 == 1;
        SCOPED_TRACE(fmt::format("call {}", k));
        EXPECT_GE(m.comm_wait_seconds, 0.0);
        EXPECT_LT(m.comm_wait_seconds, 60.0);
        // Stages 0-1 reduce once per accumulation, at its last micro-step.
        const bool communicates = stage >= 2 || last;
        EXPECT_EQ(m.comm_collectives > 0, communicates) << m.comm_collectives;
        switch (stage) {
          case 0:  // one all-reduce of the whole buffer per accumulation
            EXPECT_EQ(m.comm_reduce_scatter_bytes, 0);
            EXPECT_EQ(m.comm_all_reduce_bytes, last ? full : 0);
            EXPECT_EQ(m.comm_all_gather_bytes, 0);
            break;
          case 1:  // one reduce-scatter per accumulation, the gather after the update
            EXPECT_EQ(m.comm_reduce_scatter_bytes, last ? full : 0);
            EXPECT_EQ(m.comm_all_reduce_bytes, 0);
            EXPECT_EQ(m.comm_all_gather_bytes, last ? full : 0);
            break;
          case 2:  // a reduce-scatter per micro-step, the gather after the update
            EXPECT_EQ(m.comm_reduce_scatter_bytes, full);
            EXPECT_EQ(m.comm_all_reduce_bytes, 0);
            EXPECT_EQ(m.comm_all_gather_bytes, last ? full : 0);
            break;
          case 3:  // a reduce-scatter per micro-step; the first gathers every group, which
                   // stays gathered (max_live_parameters is large) until the update
            EXPECT_EQ(m.comm_reduce_scatter_bytes, full);
            EXPECT_EQ(m.comm_all_reduce_bytes, 0);
            EXPECT_EQ(m.comm_all_gather_bytes, last ? 0 : full);
            break;
        }
        // Without overlap every reduction is waited for where it is posted.
        if (!overlap && communicates) {
          EXPECT_GT(m.comm_wait_seconds, 0.0);
        }
      }
    }
}

namespace {

// The phases of shm collectives that read the peers' buffers in place ("direct_phases"
// wherever the engine's communicator describes an shm backend).
uint64_t direct_phases(const nlohmann::json &j) {
  uint64_t n = 0;
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it)
      n += it.key() == "direct_phases" && it.value().is_number() ? it.value().get<uint64_t>()
                                                                 : direct_phases(it.value());
  else if (j.is_array())
    for (const auto &v : j)
      n += direct_phases(v);
  return n;
}

}  // namespace

// The buffers the collectives read in place in the node's shared window (the default), or
// private: the same bits at every stage, the same memory report in every field, and the
// window mapped by exactly the ranks of this rank's node (faked nodes included). With
// comm.shm.direct_bytes = 0 (the mpi_engine_shared runs) every shm collective of the small
// model asks whether its buffers are shared, so the shared run must read its peers in place
// and the private one must not.
TEST(Engine, SharedBuffersGiveTheBitsOfPrivateOnes) {
  const char *direct_bytes = std::getenv("ZRT_COMM_SHM_DIRECT_BYTES");
  const bool every_size = direct_bytes != nullptr && std::string(direct_bytes) == "0";
  const int expected_ranks = test::node_ranks() > 1 ? test::node_ranks() : 0;
  for (zrt_dtype_t dt : {ZRT_DTYPE_FP32, ZRT_DTYPE_BF16})
    for (int stage = 0; stage <= 3; ++stage) {
      SCOPED_TRACE(fmt::format("stage {} dtype {}", stage, static_cast<int>(dt)));
      RunSpec run;
      run.stage = stage;
      run.dtype = dt;
      run.deterministic = true;
      run.steps = 4;
      run.accumulation = 2;  // landing slices at stages 1-3
      run.clip = 0.5;
      Result mine, own;
      train(run, &mine);
      run.shared = 0;
      train(run, &own);
      EXPECT_TRUE(bitwise_equal(mine, own));
      const zrt_memory_report_t &a = mine.memory, &b = own.memory;
      EXPECT_EQ(a.parameters, b.parameters);
      EXPECT_EQ(a.gradients, b.gradients);
      EXPECT_EQ(a.master_weights, b.master_weights);
      EXPECT_EQ(a.optimizer_state, b.optimizer_state);
      EXPECT_EQ(a.buckets, b.buckets);
      EXPECT_EQ(a.total, b.total);
      EXPECT_EQ(a.host_bytes, b.host_bytes);
      EXPECT_EQ(b.node_shared_bytes, 0);
      EXPECT_EQ(b.node_shared_ranks, 0);
      EXPECT_EQ(a.node_shared_ranks, expected_ranks);
      EXPECT_EQ(mine.describe["node_shared_ranks"], expected_ranks);
      // Stages 1-2 in fp32 with one window over all the ranks: the owners write their
      // updates into the peers' buffers, with the bits of the all-gather (param_push.hpp).
      const bool pushes =
          stage == 1 || stage == 2 ? dt == ZRT_DTYPE_FP32 && expected_ranks == test::size() : false;
      const char *gather = stage == 0 ? "none" : stage == 3 ? "on_use" : "all_gather";
      EXPECT_EQ(mine.describe["param_gather"], pushes ? "owners_write" : gather);
      EXPECT_EQ(own.describe["param_gather"], gather);
      // The window holds all it was sized for; at stage 3 the resident groups beyond the two
      // it keeps room for go to host memory, as often as they are gathered again.
      if (stage < 3) {
        EXPECT_EQ(mine.describe["node_shared_fallbacks"].get<int>(), 0);
      }
      if (expected_ranks > 0) {
        // At least the gradients; never what the collectives do not touch (the moments).
        EXPECT_GE(a.node_shared_bytes, a.gradients);
        EXPECT_LE(a.node_shared_bytes, a.total - a.optimizer_state - a.master_weights);
      } else {
        EXPECT_EQ(a.node_shared_bytes, 0);
      }
      EXPECT_EQ(direct_phases(own.describe["comm"]), 0u);
    }
  // The owners' writes from each update path, against the all-gather: LAMB (parameters held
  // in one piece written early, the others after the ranks' sums), SGD, and per-parameter
  // decay (pieces instead of whole owned ranges, the buckets' padding not written).
  for (zrt_optimizer_t opt : {ZRT_OPTIMIZER_LAMB, ZRT_OPTIMIZER_SGD})
    for (bool no_bias_decay : {false, true})
      for (int stage : {1, 2}) {
        SCOPED_TRACE(fmt::format("optimizer {} stage {} no_bias_decay {}", static_cast<int>(opt),
                                 stage, no_bias_decay));
        RunSpec run;
        run.optimizer = opt;
        run.stage = stage;
        run.deterministic = true;
        run.steps = 3;
        run.no_bias_decay = no_bias_decay;
        if (opt == ZRT_OPTIMIZER_SGD) run.momentum = 0.9;
        Result mine, own;
        train(run, &mine);
        run.shared = 0;
        train(run, &own);
        EXPECT_TRUE(bitwise_equal(mine, own));
        EXPECT_EQ(
            mine.describe["param_gather"],
            expected_ranks > 1 && expected_ranks == test::size() ? "owners_write" : "all_gather");
      }
  // A parameter of 1 MiB in buckets of 256 KiB, so that the collectives are large enough
  // for the node's backend (smaller ones go to MPI), outside deterministic mode, where
  // hier's reductions start inside the node and read the buckets in place (in deterministic
  // mode they run flat, in rank order).
  if (every_size && expected_ranks > 0) {
    auto run = [](int shared, std::vector<float> *out) {
      zrt_engine_params_t p = {};
      p.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE | ZRT_ENGINE_PARAM_FIELD_REDUCE_BUCKET_BYTES |
                     ZRT_ENGINE_PARAM_FIELD_ALLGATHER_BUCKET_BYTES |
                     ZRT_ENGINE_PARAM_FIELD_SHARED_BUFFERS;
      p.stage = 2;
      p.reduce_bucket_bytes = p.allgather_bucket_bytes = 256 << 10;
      p.shared_buffers = shared;
      zrt_engine_h e = nullptr;
      zrt_param_h w = nullptr;
      const int64_t shape[2] = {256, 1024};
      std::vector<float> values(256 * 1024);
      for (size_t i = 0; i < values.size(); ++i)
        values[i] = static_cast<float>(uniform(3, 0, i));
      bool ok = zrt_engine_create(test::context(), &p, &e) == ZRT_SUCCESS &&
                zrt_param_register(e, "w", ZRT_DTYPE_FP32, 2, shape, &w) == ZRT_SUCCESS &&
                zrt_engine_commit(e) == ZRT_SUCCESS &&
                zrt_param_set(e, w, values.data(), ZRT_DTYPE_FP32) == ZRT_SUCCESS;
      for (int step = 0; ok && step < 2; ++step) {
        void *grad = nullptr;
        ok = zrt_param_grad_data(e, w, &grad) == ZRT_SUCCESS;
        for (size_t i = 0; ok && i < values.size(); ++i)
          static_cast<float *>(grad)[i] =
              static_cast<float>(uniform(4, step * 64 + test::rank(), i));
        ok = ok && zrt_param_grad_ready(e, w) == ZRT_SUCCESS &&
             zrt_engine_step(e, nullptr) == ZRT_SUCCESS;
      }
      out->resize(values.size());
      ok = ok && zrt_param_get(e, w, out->data(), ZRT_DTYPE_FP32) == ZRT_SUCCESS;
      EXPECT_TRUE(ok) << test::last_error();
      const nlohmann::json j = ok ? describe_engine(e) : nlohmann::json::object();
      if (e != nullptr) {
        EXPECT_EQ(zrt_engine_destroy(e), ZRT_SUCCESS);
      }
      return direct_phases(j["comm"]);
    };
    std::vector<float> mine, own;
    EXPECT_GT(run(1, &mine), 0u);
    EXPECT_EQ(run(0, &own), 0u);
    // Sums in another order outside deterministic mode: close, not equal.
    ASSERT_EQ(mine.size(), own.size());
    for (size_t i = 0; i < mine.size(); i += 97)
      EXPECT_NEAR(mine[i], own[i], 1e-5) << i;
  }
  EXPECT_TRUE(test::all_ranks(!HasFailure()));
}

// An engine's window and its pool go with the engine: 100 engines later this process maps
// no more than after the first, and holds no more shared memory.
TEST(Engine, SharedWindowsGoWithTheEngine) {
  auto mappings = [] {
    std::ifstream maps("/proc/self/maps");
    size_t lines = 0;
    for (std::string line; std::getline(maps, line);)
      ++lines;
    return lines;
  };
  auto shmem_kib = [] {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("RssShmem:", 0) == 0) return std::stol(line.substr(9));
    return 0L;
  };
  auto cycle = [] {
    zrt_engine_params_t p = {};
    p.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE;
    p.stage = 2;
    zrt_engine_h e = nullptr;
    zrt_param_h w = nullptr;
    const int64_t shape[2] = {256, 1024};  // 1 MiB of fp32
    zrt_memory_report_t m{};
    m.field_mask = ZRT_MEMORY_REPORT_FIELD_SHARED;
    const bool ok = zrt_engine_create(test::context(), &p, &e) == ZRT_SUCCESS &&
                    zrt_param_register(e, "w", ZRT_DTYPE_FP32, 2, shape, &w) == ZRT_SUCCESS &&
                    zrt_engine_commit(e) == ZRT_SUCCESS && zrt_engine_memory(e, &m) == ZRT_SUCCESS;
    EXPECT_TRUE(ok) << test::last_error();
    if (e != nullptr) {
      EXPECT_EQ(zrt_engine_destroy(e), ZRT_SUCCESS);
    }
    return m.node_shared_ranks;
  };
  const int ranks = cycle();
  EXPECT_EQ(ranks, test::node_ranks() > 1 ? test::node_ranks() : 0);
  const size_t maps0 = mappings();
  const long shmem0 = shmem_kib();
  for (int i = 0; i < 100; ++i)
    cycle();
  EXPECT_LE(mappings(), maps0 + 8);
  EXPECT_LE(shmem_kib(), shmem0 + 1024);
  EXPECT_TRUE(test::all_ranks(!HasFailure()));
}

// --- the engine on the device ------------------------------------------------------------

namespace {}  // namespace

namespace {

// An optimizer case of the device tests: dtype, optimizer, micro-steps, and biases without
// weight decay (per-parameter decay).
struct Variant {
  zrt_dtype_t dtype;
  zrt_optimizer_t optimizer;
  int accumulation;
  bool no_bias_decay;
};

std::string variant_name(const Variant &v) {
  return fmt::format("{} optimizer {} accumulation {}", v.dtype == ZRT_DTYPE_FP32 ? "fp32" : "bf16",
                     static_cast<int>(v.optimizer), v.accumulation);
}

// A deterministic run of variant v at stage; SGD gets momentum 0.9.
RunSpec variant_run(const Variant &v, int stage, int steps) {
  RunSpec run;
  run.stage = stage;
  run.dtype = v.dtype;
  run.optimizer = v.optimizer;
  run.accumulation = v.accumulation;
  run.no_bias_decay = v.no_bias_decay;
  run.momentum = v.optimizer == ZRT_OPTIMIZER_SGD ? 0.9 : 0;
  run.deterministic = true;
  run.steps = steps;
  return run;
}

}  // namespace

// On the emulated device (ZRT_MEMORY_DEVICE_EMULATE=1, ctest's mpi_emulated_device) the
// device engine runs every kernel and copy the GPU would, and in deterministic mode must
// end with the host engine's parameters to the bit: every stage, with and without
// ZeRO-Offload, fp32 and bf16, accumulation and per-parameter decay, AdamW, SGD and LAMB.
TEST(DeviceEngine, EveryStageAndOffloadMatchTheHostEngineBitwise) {
  ZRT_SKIP_WITHOUT_DEVICE();
  const Variant variants[] = {{ZRT_DTYPE_FP32, ZRT_OPTIMIZER_ADAMW, 1, false},
                              {ZRT_DTYPE_BF16, ZRT_OPTIMIZER_ADAMW, 2, true},
                              {ZRT_DTYPE_FP32, ZRT_OPTIMIZER_LAMB, 1, false},
                              {ZRT_DTYPE_BF16, ZRT_OPTIMIZER_SGD, 1, false}};
  for (const Variant &v : variants)
    for (int stage = 0; stage <= 3; ++stage)
      for (bool offload : {false, true}) {
        if (offload && stage == 0) continue;  // ZeRO-Offload shards the optimizer state
        SCOPED_TRACE(fmt::format("stage {} {} offload {}", stage, variant_name(v), offload));
        RunSpec run = variant_run(v, stage, 4);
        Result host, device;
        train(run, &host);  // offload moves a device engine's state: a host engine has none
        run.offload = offload;
        run.memory = ZRT_ENGINE_MEMORY_DEVICE;
        train(run, &device);
        EXPECT_TRUE(bitwise_equal(host, device)) << "the device engine's parameters differ";
        ASSERT_EQ(host.reports.size(), device.reports.size());
        for (size_t i = 0; i < host.reports.size(); ++i)
          EXPECT_EQ(host.reports[i].grad_norm, device.reports[i].grad_norm) << "step " << i;
        // Where the bytes are: all on the device, or the optimizer state and the gradient
        // shard on the host with ZeRO-Offload.
        EXPECT_EQ(host.memory.device_bytes, 0);
        EXPECT_GT(device.memory.device_bytes, 0);
        EXPECT_EQ(device.memory.device_bytes + device.memory.host_bytes, device.memory.total);
        if (offload) {
          EXPECT_GE(device.memory.host_bytes,
                    device.memory.optimizer_state + device.memory.master_weights);
        } else {
          EXPECT_EQ(device.memory.host_bytes, 0);
        }
      }
}

// ZeRO-Offload's CPU step during backward (engine.offload_step during_backward, the
// default) updates each bucket's shard before the step knows the norm or whether any rank
// skips: the step must still be the one after backward, bit for bit. Every stage, fp32 and
// bf16, AdamW, Adam, SGD with momentum, accumulation and per-parameter decay; clipping
// off, and at the median norm (so that some steps clip and some do not); a NaN on one
// rank (the step is skipped on every rank and the speculative update undone); the rate
// changed in the middle of backward (the update is redone with the new rate); a parameter
// read between backward and the step (the values before it).
TEST(DeviceEngine, OffloadStepDuringBackwardIsTheStepAfterBackwardBitwise) {
  ZRT_SKIP_WITHOUT_DEVICE();
  const Variant variants[] = {{ZRT_DTYPE_FP32, ZRT_OPTIMIZER_ADAMW, 1, false},
                              {ZRT_DTYPE_BF16, ZRT_OPTIMIZER_ADAMW, 2, true},
                              {ZRT_DTYPE_FP32, ZRT_OPTIMIZER_ADAM, 1, true},
                              {ZRT_DTYPE_BF16, ZRT_OPTIMIZER_SGD, 1, false}};
  for (const Variant &v : variants)
    for (int stage = 1; stage <= 3; ++stage)
      for (bool clip : {false, true}) {
        SCOPED_TRACE(fmt::format("stage {} {} clip {}", stage, variant_name(v), clip));
        RunSpec run = variant_run(v, stage, 6);
        run.nan_step = 2;
        run.lr_step = 4;
        run.peek_step = 3;  // the weights before the step, not the update backward hid
        run.memory = ZRT_ENGINE_MEMORY_DEVICE;
        run.offload = true;
        run.settings = R"({"engine": {"offload_step": "after_backward"}})";
        Result after;
        train(run, &after);
        if (clip) {
          std::vector<double> norms;
          for (const zrt_step_report_t &r : after.reports)
            if (std::isfinite(r.grad_norm)) norms.push_back(r.grad_norm);
          std::sort(norms.begin(), norms.end());
          run.clip = norms[norms.size() / 2];
          after = Result();
          train(run, &after);
        }
        run.settings = nullptr;
        Result during;
        train(run, &during);
        EXPECT_TRUE(bitwise_equal(after, during)) << "the CPU step during backward differs";
        EXPECT_EQ(std::memcmp(after.peeked.data(), during.peeked.data(), after.peeked.size() * 4),
                  0)
            << "zrt_param_get between backward and the step";
        ASSERT_EQ(after.reports.size(), during.reports.size());
        int clipped = 0;
        for (size_t i = 0; i < after.reports.size(); ++i) {
          const double a = after.reports[i].grad_norm, d = during.reports[i].grad_norm;
          EXPECT_TRUE(std::isnan(a) ? std::isnan(d) : a == d)
              << "step " << i << ": " << a << " and " << d;
          EXPECT_EQ(after.reports[i].skipped, during.reports[i].skipped) << "step " << i;
          EXPECT_EQ(during.reports[i].skipped, static_cast<int>(i) == run.nan_step);
          if (clip && during.reports[i].grad_norm > run.clip) ++clipped;
          // The CPU ran the update, during backward or after it.
          if (!during.reports[i].skipped) {
            EXPECT_GT(during.reports[i].offload_cpu_seconds, 0.0) << "step " << i;
          }
        }
        if (clip) {
          EXPECT_GT(clipped, 0) << "no step clipped: the case tests nothing";
        }
      }
}

// Parameter offload (stage 3): the parameters' shard lives in pinned host memory and goes
// to the device for each gather; the training is stage 3's without it, bit for bit, also
// when every released group is evicted and gathered again from the host.
TEST(DeviceEngine, ParameterOffloadIsStageThreeBitwise) {
  ZRT_SKIP_WITHOUT_DEVICE();
  for (zrt_dtype_t dtype : {ZRT_DTYPE_FP32, ZRT_DTYPE_BF16})
    for (size_t max_live : {size_t{1000000000}, size_t{0}}) {
      SCOPED_TRACE(
          fmt::format("{} max_live {}", dtype == ZRT_DTYPE_FP32 ? "fp32" : "bf16", max_live));
      RunSpec run;
      run.stage = 3;
      run.dtype = dtype;
      run.deterministic = true;
      run.steps = 4;
      run.max_live = max_live;
      run.memory = ZRT_ENGINE_MEMORY_DEVICE;
      run.offload = true;
      Result optimizer_only, params_too;
      train(run, &optimizer_only);
      run.settings = R"({"zero_optimization": {"offload_param": {"device": "cpu"}}})";
      train(run, &params_too);
      EXPECT_TRUE(bitwise_equal(optimizer_only, params_too));
      // The shard moved: the device holds less by it, the host more.
      const int64_t moved = optimizer_only.memory.device_bytes - params_too.memory.device_bytes;
      EXPECT_GT(moved, 0);
      EXPECT_EQ(params_too.memory.host_bytes - optimizer_only.memory.host_bytes, moved);
      EXPECT_EQ(params_too.describe["offload_param"], true);
    }
}

// zrt_param_grad_buffer on the device: the padding and a gradient made ready without asking
// are zeroed on the engine's stream, ZeRO-Offload's slices land on the host as before (and
// accumulate there), tensors cut into several buckets are overwritten whole.
TEST(DeviceEngine, OverwrittenGradientBuffersGiveTheBitsOfAddedOnes) {
  ZRT_SKIP_WITHOUT_DEVICE();
  for (int stage : {2, 3})
    for (bool offload : {false, true})
      for (auto [accumulation, bucket_bytes] : {std::pair{1, 4096}, {2, 512}}) {
        SCOPED_TRACE(fmt::format("stage {} offload {} accumulation {} buckets of {} bytes", stage,
                                 offload, accumulation, bucket_bytes));
        RunSpec run;
        run.stage = stage;
        run.deterministic = true;
        run.steps = 4;
        run.clip = 0.5;
        run.accumulation = accumulation;
        run.bucket_bytes = static_cast<size_t>(bucket_bytes);
        run.unwritten = 3;
        run.offload = offload;
        run.memory = ZRT_ENGINE_MEMORY_DEVICE;
        Result added, written;
        train(run, &added);
        run.grad_write = 1;
        train(run, &written);
        EXPECT_TRUE(bitwise_equal(added, written));
      }
}

// Partial offload (zero_optimization.offload_optimizer.ratio below 1): the first buckets'
// state on the CPU, the rest on the device. The training is the whole offload's, bit for
// bit, with the CPU step during or after backward; with clipping at the median norm, a NaN
// on one rank, the rate changed in backward and a read between backward and the step. The
// bytes move between the host and the device at a bucket boundary, at least the ratio of
// them to the host.
TEST(DeviceEngine, PartialOffloadIsTheWholeOffloadBitwise) {
  ZRT_SKIP_WITHOUT_DEVICE();
  const Variant variants[] = {{ZRT_DTYPE_FP32, ZRT_OPTIMIZER_ADAMW, 1, false},
                              {ZRT_DTYPE_BF16, ZRT_OPTIMIZER_ADAMW, 2, true},
                              {ZRT_DTYPE_BF16, ZRT_OPTIMIZER_SGD, 1, false}};
  constexpr const char *kStep[] = {R"("during_backward")", R"("after_backward")"};
  int split = 0;  // cases whose state was split, not all offloaded
  for (const Variant &v : variants)
    for (int stage = 1; stage <= 3; ++stage)
      for (const char *step : kStep) {
        SCOPED_TRACE(fmt::format("stage {} {} step {}", stage, variant_name(v), step));
        RunSpec run = variant_run(v, stage, 6);
        run.nan_step = 2;
        run.lr_step = 4;
        run.peek_step = 3;
        run.clip = 0.5;  // tuned below to the median norm
        run.memory = ZRT_ENGINE_MEMORY_DEVICE;
        run.offload = true;
        const std::string whole_settings =
            fmt::format(R"({{"engine": {{"offload_step": {}}}}})", step);
        run.settings = whole_settings.c_str();
        Result whole;
        train(run, &whole);
        std::vector<double> norms;
        for (const zrt_step_report_t &r : whole.reports)
          if (std::isfinite(r.grad_norm)) norms.push_back(r.grad_norm);
        std::sort(norms.begin(), norms.end());
        run.clip = norms[norms.size() / 2];
        whole = Result();
        train(run, &whole);
        for (double ratio : {0.3, 0.7}) {
          SCOPED_TRACE(fmt::format("ratio {}", ratio));
          const std::string partial_settings = fmt::format(
              R"({{"engine": {{"offload_step": {}}}, "zero_optimization": {{"offload_optimizer": )"
              R"({{"ratio": {}}}}}}})",
              step, ratio);
          run.settings = partial_settings.c_str();
          Result partial;
          train(run, &partial);
          EXPECT_TRUE(bitwise_equal(whole, partial)) << "the partial offload's parameters differ";
          EXPECT_EQ(
              std::memcmp(whole.peeked.data(), partial.peeked.data(), whole.peeked.size() * 4), 0)
              << "zrt_param_get between backward and the step";
          ASSERT_EQ(whole.reports.size(), partial.reports.size());
          for (size_t i = 0; i < whole.reports.size(); ++i) {
            const double a = whole.reports[i].grad_norm, b = partial.reports[i].grad_norm;
            EXPECT_TRUE(std::isnan(a) ? std::isnan(b) : a == b)
                << "step " << i << ": " << a << " and " << b;
            EXPECT_EQ(whole.reports[i].skipped, partial.reports[i].skipped) << "step " << i;
          }
          EXPECT_EQ(partial.describe["offload_ratio"], ratio);
          // At least the ratio offloaded, at a bucket boundary (all of it where the first
          // buckets that reach the ratio are all there is).
          const double share = partial.describe["offload_share"].get<double>();
          EXPECT_EQ(whole.describe["offload_share"].get<double>(), 1.0);
          EXPECT_GE(share, ratio);
          EXPECT_LE(share, 1.0);
          if (share < 1) ++split;
          // The host holds the share of what the whole offload puts there, the device the
          // rest besides.
          const int64_t moved = partial.memory.device_bytes - whole.memory.device_bytes;
          EXPECT_EQ(moved > 0, share < 1);
          EXPECT_NEAR(static_cast<double>(partial.memory.host_bytes),
                      share * static_cast<double>(whole.memory.host_bytes), 1.0);
        }
      }
  EXPECT_GE(split, 24) << "most cases must split the state to test anything";
}
