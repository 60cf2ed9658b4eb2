// The optimizer's device kernels (optim/kernels/device_kernels.hpp) against the CPU's scalar
// kernels, bit for bit: Adam and AdamW, SGD, LAMB's two passes, the norm's block sums, the
// overflow check, conversions and accumulation, in fp32, bf16 and fp16, on ranges that end
// inside a block. On the emulated device the kernels are the CPU's, so this checks the
// stream plumbing (ordering, host outputs); on a GPU (CudaKernels.*, ctest label cuda) it
// checks the CUDA kernels themselves, which is what lets the device engine equal the host
// engine bitwise. Without a GPU the CUDA tests skip, saying why (or fail where
// ZRT_TEST_REQUIRE_DEVICE=1 demands one: scripts/gpu-check).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../device_required.hpp"
#include "comm/dtype.hpp"
#include "memory/cuda/cuda_device.hpp"
#include "memory/emulated/emulated_device.hpp"
#include "memory/pool.hpp"
#include "optim/kernels/device_kernels.hpp"
#include "optim/kernels/kernels.hpp"

using namespace zrt;

namespace {

// A range that ends inside a norm block, and one that is smaller than a block.
constexpr size_t kCount = 3 * kNormBlock + 129;

struct Backend {
  std::unique_ptr<Device> device;
  std::unique_ptr<Pool> pool;
  std::unique_ptr<Stream> stream;
  std::unique_ptr<DeviceKernels> kernels;
};

// The device of @p kind with a pool, a stream and its kernels; empty with @p why set when
// this machine has none.
Backend make_backend(const std::string &kind, std::string *why) {
  Backend b;
  b.device = kind == "emulated" ? make_emulated_device() : make_cuda_device(0, why);
  if (!b.device) return b;
  PoolOptions o;
  o.name = "device";
  o.limit = size_t{256} << 20;
  b.pool = std::make_unique<Pool>(b.device->make_resource(), o);
  b.stream = b.device->make_stream();
  b.kernels = make_device_kernels(*b.device, scalar_kernels());
  return b;
}

// Device memory holding a copy of host bytes, read back with get().
class DeviceArray {
 public:
  DeviceArray(Backend &b, const void *host, size_t bytes) : b_(b), bytes_(bytes) {
    ptr_ = b.pool->allocate(bytes, Lifetime::Long);
    b.stream->copy(ptr_, host, bytes);
    b.stream->synchronize();  // the copy reads host, which the CPU reference then updates
  }
  ~DeviceArray() {
    b_.stream->synchronize();
    b_.pool->free(ptr_);
  }
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;
  template <class T>
  T *as() {
    return static_cast<T *>(ptr_);
  }
  template <class T>
  std::vector<T> get() {
    std::vector<T> out(bytes_ / sizeof(T));
    b_.stream->copy(out.data(), ptr_, bytes_);
    b_.stream->synchronize();
    return out;
  }

 private:
  Backend &b_;
  size_t bytes_;
  void *ptr_ = nullptr;
};

template <class T>
DeviceArray upload(Backend &b, const std::vector<T> &host) {
  return DeviceArray(b, host.data(), host.size() * sizeof(T));
}

// Values over several binades and both signs, from a fixed seed.
std::vector<float> values(size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-8, 4);
  std::vector<float> v(n);
  for (float &x : v)
    x = scale * std::ldexp(mantissa(rng), exponent(rng));
  return v;
}
std::vector<float> positive(size_t n, unsigned seed) {
  std::vector<float> v = values(n, seed, 1e-3f);
  for (float &x : v)
    x = std::fabs(x);
  return v;
}

// The values as dtype's bytes (round to nearest even).
std::vector<uint16_t> as_16(const std::vector<float> &v, zrt_dtype_t dtype) {
  std::vector<uint16_t> out(v.size());
  convert_values(v.data(), ZRT_DTYPE_FP32, out.data(), dtype, v.size());
  return out;
}

// Bytes of a gradient range in dtype.
struct Grads {
  std::vector<float> f32;
  std::vector<uint16_t> h16;
  zrt_dtype_t dtype;
  Grads(const std::vector<float> &v, zrt_dtype_t dt) : f32(v), dtype(dt) {
    if (dt != ZRT_DTYPE_FP32) h16 = as_16(v, dt);
  }
  const void *host() const {
    return dtype == ZRT_DTYPE_FP32 ? static_cast<const void *>(f32.data()) : h16.data();
  }
  size_t bytes() const { return f32.size() * dtype_size(dtype); }
};

template <class T>
size_t differing(const std::vector<T> &a, const std::vector<T> &b) {
  EXPECT_EQ(a.size(), b.size());
  size_t n = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    n += std::memcmp(&a[i], &b[i], sizeof(T)) != 0;
  return n;
}

AdamStep adam_step(bool adamw) {
  AdamStep s;
  const int t = 3;
  const float lr = 1e-3f;
  s.step_size = -lr / (1.0f - std::pow(s.beta1, float(t)));
  s.inv_bc1 = 1.0f / (1.0f - std::pow(s.beta1, float(t)));
  s.inv_sqrt_bc2 = 1.0f / std::sqrt(1.0f - std::pow(s.beta2, float(t)));
  if (adamw)
    s.decay = -lr * 0.1f;
  else
    s.l2 = 0.01f;
  s.weight_decay = 0.1f;
  s.grad_scale = 0.37f;
  return s;
}

class DeviceKernelsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string why;
    b_ = make_backend(GetParam(), &why);
    if (b_.device) return;
    ZRT_NO_DEVICE(why);
  }
  Backend b_;
};

TEST_P(DeviceKernelsTest, AdamAndAdamWMatchTheScalarCpuKernels) {
  const KernelTable &cpu = scalar_kernels();
  for (bool adamw : {true, false})
    for (zrt_dtype_t gdt : {ZRT_DTYPE_FP32, ZRT_DTYPE_BF16, ZRT_DTYPE_FP16}) {
      SCOPED_TRACE(testing::Message() << (adamw ? "AdamW" : "Adam") << " grads " << int(gdt));
      std::vector<float> w = values(kCount, 1), m = values(kCount, 2, 1e-2f),
                         v = positive(kCount, 3);
      const Grads g(values(kCount, 4), gdt);
      DeviceArray dw = upload(b_, w), dm = upload(b_, m), dv = upload(b_, v);
      DeviceArray dg(b_, g.host(), g.bytes());
      std::vector<uint16_t> copy(kCount, 0);
      DeviceArray dcopy = upload(b_, copy);
      const AdamStep s = adam_step(adamw);
      OptimRange r{dw.as<float>(),   dm.as<float>(), dv.as<float>(), dg.as<void>(), gdt,
                   dcopy.as<void>(), ZRT_DTYPE_BF16, kCount};
      b_.kernels->adam(*b_.stream, s, r);
      OptimRange h{w.data(), m.data(),    v.data(),       g.host(),
                   gdt,      copy.data(), ZRT_DTYPE_BF16, kCount};
      cpu.adam(s, h);
      EXPECT_EQ(differing(dw.get<float>(), w), 0u);
      EXPECT_EQ(differing(dm.get<float>(), m), 0u);
      EXPECT_EQ(differing(dv.get<float>(), v), 0u);
      EXPECT_EQ(differing(dcopy.get<uint16_t>(), copy), 0u);
    }
}

TEST_P(DeviceKernelsTest, SgdWithAndWithoutNesterovMatchesTheScalarCpuKernel) {
  const KernelTable &cpu = scalar_kernels();
  for (bool nesterov : {false, true}) {
    SCOPED_TRACE(nesterov ? "nesterov" : "momentum");
    std::vector<float> w = values(kCount, 5), mom = values(kCount, 6, 1e-2f);
    const Grads g(values(kCount, 7), ZRT_DTYPE_BF16);
    DeviceArray dw = upload(b_, w), dm = upload(b_, mom);
    DeviceArray dg(b_, g.host(), g.bytes());
    SgdStep s{0.05f, 0.9f, 0.01f, 0.5f, nesterov};
    OptimRange r{dw.as<float>(), dm.as<float>(), nullptr,        dg.as<void>(),
                 ZRT_DTYPE_BF16, nullptr,        ZRT_DTYPE_BF16, kCount};
    b_.kernels->sgd(*b_.stream, s, r);
    OptimRange h{w.data(),       mom.data(), nullptr,        g.host(),
                 ZRT_DTYPE_BF16, nullptr,    ZRT_DTYPE_BF16, kCount};
    cpu.sgd(s, h);
    EXPECT_EQ(differing(dw.get<float>(), w), 0u);
    EXPECT_EQ(differing(dm.get<float>(), mom), 0u);
  }
}

// LAMB's sums are doubles the host turns into the trust ratio: they must be the CPU's to
// the bit, or every later step differs.
TEST_P(DeviceKernelsTest, LambMomentsSumsAndApplyMatchTheScalarCpuKernels) {
  const KernelTable &cpu = scalar_kernels();
  std::vector<float> w = values(kCount, 8), m = values(kCount, 9, 1e-2f), v = positive(kCount, 10);
  const Grads g(values(kCount, 11), ZRT_DTYPE_FP32);
  DeviceArray dw = upload(b_, w), dm = upload(b_, m), dv = upload(b_, v);
  DeviceArray dg(b_, g.host(), g.bytes());
  const AdamStep s = adam_step(false);
  OptimRange r{dw.as<float>(), dm.as<float>(), dv.as<float>(), dg.as<void>(),
               ZRT_DTYPE_FP32, nullptr,        ZRT_DTYPE_BF16, kCount};
  OptimRange h{w.data(),       m.data(), v.data(),       g.host(),
               ZRT_DTYPE_FP32, nullptr,  ZRT_DTYPE_BF16, kCount};
  double dev_w = 0, dev_u = 0, cpu_w = 0, cpu_u = 0;
  b_.kernels->lamb_moments(*b_.stream, s, r, &dev_w, &dev_u);
  b_.stream->synchronize();
  cpu.lamb_moments(s, h, &cpu_w, &cpu_u);
  EXPECT_EQ(std::memcmp(&dev_w, &cpu_w, sizeof(double)), 0) << dev_w << " vs " << cpu_w;
  EXPECT_EQ(std::memcmp(&dev_u, &cpu_u, sizeof(double)), 0) << dev_u << " vs " << cpu_u;
  EXPECT_EQ(differing(dm.get<float>(), m), 0u);
  EXPECT_EQ(differing(dv.get<float>(), v), 0u);
  const float lr_trust = 1e-3f * float(std::sqrt(cpu_w / cpu_u));
  b_.kernels->lamb_apply(*b_.stream, s, r, lr_trust);
  cpu.lamb_apply(s, h, lr_trust);
  EXPECT_EQ(differing(dw.get<float>(), w), 0u);
}

TEST_P(DeviceKernelsTest, BlockSumsOfSquaresAreTheCpuSumsOfEachBlock) {
  const KernelTable &cpu = scalar_kernels();
  const std::vector<float> v = values(kCount, 12);
  for (zrt_dtype_t dt : {ZRT_DTYPE_FP32, ZRT_DTYPE_BF16, ZRT_DTYPE_FP16}) {
    SCOPED_TRACE(testing::Message() << "dtype " << int(dt));
    const Grads g(v, dt);
    DeviceArray d(b_, g.host(), g.bytes());
    const size_t blocks = (kCount + kNormBlock - 1) / kNormBlock;
    std::vector<double> dev(blocks, -1.0), want(blocks);
    b_.kernels->block_sum_squares(*b_.stream, d.as<void>(), dt, kCount, dev.data());
    b_.stream->synchronize();
    for (size_t k = 0; k < blocks; ++k) {
      const size_t first = k * kNormBlock;
      want[k] = cpu.sum_squares(static_cast<const char *>(g.host()) + first * dtype_size(dt), dt,
                                std::min(kNormBlock, kCount - first));
    }
    EXPECT_EQ(differing(dev, want), 0u);
  }
}

TEST_P(DeviceKernelsTest, NonFiniteFindsOneInfOrNanAndOtherwiseLeavesTheFlag) {
  for (zrt_dtype_t dt : {ZRT_DTYPE_FP32, ZRT_DTYPE_BF16, ZRT_DTYPE_FP16}) {
    SCOPED_TRACE(testing::Message() << "dtype " << int(dt));
    std::vector<float> v = values(kCount, 13);
    {
      const Grads g(v, dt);
      DeviceArray d(b_, g.host(), g.bytes());
      int flag = 0;
      b_.kernels->non_finite(*b_.stream, d.as<void>(), dt, kCount, &flag);
      b_.stream->synchronize();
      EXPECT_EQ(flag, 0);
    }
    for (float bad : {std::numeric_limits<float>::infinity(), std::nanf("")}) {
      v[kCount - 1] = bad;  // in the partial last block
      const Grads g(v, dt);
      DeviceArray d(b_, g.host(), g.bytes());
      int flag = 0;
      b_.kernels->non_finite(*b_.stream, d.as<void>(), dt, kCount, &flag);
      b_.stream->synchronize();
      EXPECT_EQ(flag, 1) << bad;
    }
  }
}

TEST_P(DeviceKernelsTest, ConvertAndAccumulateRoundAsTheHostDoes) {
  const std::vector<float> a = values(kCount, 14), b = values(kCount, 15);
  for (zrt_dtype_t dt : {ZRT_DTYPE_BF16, ZRT_DTYPE_FP16}) {
    SCOPED_TRACE(testing::Message() << "dtype " << int(dt));
    DeviceArray in = upload(b_, a);
    DeviceArray out = upload(b_, std::vector<uint16_t>(kCount, 0));
    b_.kernels->convert(*b_.stream, in.as<float>(), out.as<void>(), dt, kCount);
    EXPECT_EQ(differing(out.get<uint16_t>(), as_16(a, dt)), 0u);

    std::vector<uint16_t> dst = as_16(a, dt);
    const std::vector<uint16_t> src = as_16(b, dt);
    DeviceArray ddst = upload(b_, dst), dsrc = upload(b_, src);
    b_.kernels->accumulate(*b_.stream, ddst.as<void>(), dsrc.as<void>(), kCount, dt);
    accumulate(dst.data(), src.data(), kCount, dt);
    EXPECT_EQ(differing(ddst.get<uint16_t>(), dst), 0u);
  }
  std::vector<float> dst = a;
  DeviceArray ddst = upload(b_, dst), dsrc = upload(b_, b);
  b_.kernels->accumulate(*b_.stream, ddst.as<void>(), dsrc.as<void>(), kCount, ZRT_DTYPE_FP32);
  accumulate(dst.data(), b.data(), kCount, ZRT_DTYPE_FP32);
  EXPECT_EQ(differing(ddst.get<float>(), dst), 0u);
}

INSTANTIATE_TEST_SUITE_P(Emulated, DeviceKernelsTest, ::testing::Values("emulated"));
// CudaKernels/...: the ones ctest's unit_cuda runs (label cuda).
INSTANTIATE_TEST_SUITE_P(CudaKernels, DeviceKernelsTest, ::testing::Values("cuda"));

}  // namespace
