// The emulated device's kernels: the CPU's, run in stream order by the stream's worker on
// the emulated device's memory (which is host memory).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "comm/dtype.hpp"
#include "optim/kernels/device_kernels.hpp"
#include "runtime/error.hpp"

namespace zrt {

namespace {

class EmulatedKernels final : public DeviceKernels {
 public:
  explicit EmulatedKernels(const KernelTable &cpu)
      : cpu_(cpu), name_(fmt::format("emulated ({})", cpu.isa)) {}
  const char *name() const override { return name_.c_str(); }

  void adam(Stream &s, const AdamStep &step, const OptimRange &r) override {
    const KernelTable &k = cpu_;
    s.run([&k, step, r] { k.adam(step, r); });
  }
  void sgd(Stream &s, const SgdStep &step, const OptimRange &r) override {
    const KernelTable &k = cpu_;
    s.run([&k, step, r] { k.sgd(step, r); });
  }
  void lamb_moments(Stream &s, const AdamStep &step, const OptimRange &r, double *w_sq,
                    double *u_sq) override {
    const KernelTable &k = cpu_;
    s.run([&k, step, r, w_sq, u_sq] { k.lamb_moments(step, r, w_sq, u_sq); });
  }
  void lamb_apply(Stream &s, const AdamStep &step, const OptimRange &r, float lr_trust) override {
    const KernelTable &k = cpu_;
    s.run([&k, step, r, lr_trust] { k.lamb_apply(step, r, lr_trust); });
  }
  void block_sum_squares(Stream &s, const void *values, zrt_dtype_t dtype, size_t count,
                         double *out) override {
    const KernelTable &k = cpu_;
    s.run([&k, values, dtype, count, out] {
      const size_t es = dtype_size(dtype);
      for (size_t b = 0, first = 0; first < count; ++b, first += kNormBlock)
        out[b] = k.sum_squares(static_cast<const char *>(values) + first * es, dtype,
                               std::min(kNormBlock, count - first));
    });
  }
  void non_finite(Stream &s, const void *values, zrt_dtype_t dtype, size_t count,
                  int *out) override {
    const KernelTable &k = cpu_;
    s.run([&k, values, dtype, count, out] {
      if (k.non_finite(values, dtype, count)) *out = 1;
    });
  }
  void convert(Stream &s, const float *in, void *out, zrt_dtype_t dtype, size_t count) override {
    const KernelTable &k = cpu_;
    s.run([&k, in, out, dtype, count] { k.convert(in, out, dtype, count); });
  }
  void accumulate(Stream &s, void *dst, const void *src, size_t count, zrt_dtype_t dtype) override {
    s.run([dst, src, count, dtype] { zrt::accumulate(dst, src, count, dtype); });
  }

 private:
  const KernelTable &cpu_;
  std::string name_;
};

}  // namespace

std::unique_ptr<DeviceKernels> make_emulated_kernels(const KernelTable &cpu) {
  return std::make_unique<EmulatedKernels>(cpu);
}

}  // namespace zrt
