#include "local_model_state.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "model/local_parameter_store.hpp"
#include "model/parameter_layout.hpp"

namespace gpt2 {
// Kernels live in free functions of a named namespace: CUDA's extended lambdas may not be
// defined in private member functions nor with internal linkage.
namespace local_state_kernels {

double sum_of_squares(Kokkos::View<float *, MemSpace> g) {
  double s = 0;
  Kokkos::parallel_reduce(
      "grad_norm", RangePolicy(0, static_cast<int64_t>(g.extent(0))),
      KOKKOS_LAMBDA(int64_t i, double &acc) { acc += double(g(i)) * double(g(i)); }, s);
  return s;
}

// AdamW (Loshchilov & Hutter) on elements [begin, end): Adam on the (scaled) gradient,
// then decay applied to the weights directly. c1, c2 are the bias corrections.
void adamw(Kokkos::View<float *, MemSpace> p, Kokkos::View<float *, MemSpace> g,
           Kokkos::View<float *, MemSpace> m, Kokkos::View<float *, MemSpace> v, int64_t begin,
           int64_t end, float lr, float grad_scale, float b1, float b2, float eps, float c1,
           float c2, float wd) {
  Kokkos::parallel_for(
      "adamw", RangePolicy(begin, end), KOKKOS_LAMBDA(int64_t i) {
        const float grad = g(i) * grad_scale;
        m(i) = b1 * m(i) + (1 - b1) * grad;
        v(i) = b2 * v(i) + (1 - b2) * grad * grad;
        const float mhat = m(i) / c1, vhat = v(i) / c2;
        p(i) -= lr * (mhat / (kmath::sqrt(vhat) + eps) + wd * p(i));
      });
}

}  // namespace local_state_kernels

namespace {

class LocalModelState final : public ModelState {
 public:
  LocalModelState(const Gpt2Config &config, const OptimizerConfig &opt, zrt_comm_h comm)
      : store_(parameter_layout(config)), opt_(opt), comm_(comm) {
    m_ = Kokkos::View<float *, MemSpace>("adamw_m", static_cast<size_t>(store_.numel()));
    v_ = Kokkos::View<float *, MemSpace>("adamw_v", static_cast<size_t>(store_.numel()));
    if (comm_) zrt_comm_size(comm_, &ranks_);
  }

  ParameterStore<float> &store() override { return store_; }

  void begin_micro_step(int k) override { store_.begin_micro_step(k > 0); }

  StepReport step(double lr) override {
    store_.check_all_ready();
    auto grads = store_.grads_flat();
    Kokkos::fence();
    if (ranks_ > 1) {
      // Host memory: zerort's collectives take host buffers (this path is host-only).
      zrt_status_t rc = zrt_all_reduce(comm_, grads.data(), grads.data(), grads.extent(0),
                                       ZRT_DTYPE_FP32, ZRT_OP_AVG);
      if (rc != ZRT_SUCCESS)
        throw std::runtime_error(
            fmt::format("gradient all-reduce failed: {}", zrt_last_error_message()));
    }
    StepReport report;
    double sumsq = 0;
    Kokkos::parallel_reduce(
        "grad_norm", RangePolicy(0, static_cast<int64_t>(grads.extent(0))),
        KOKKOS_LAMBDA(int64_t i, double &s) { s += double(grads(i)) * double(grads(i)); }, sumsq);
    report.grad_norm = std::sqrt(sumsq);
    if (!std::isfinite(report.grad_norm)) {
      report.applied = false;  // never write NaN into the parameters
      return report;
    }
    const float scale = opt_.grad_clip > 0 && report.grad_norm > opt_.grad_clip
                            ? static_cast<float>(opt_.grad_clip / report.grad_norm)
                            : 1.0f;
    ++t_;
    adamw(static_cast<float>(lr), scale);
    return report;
  }

  StateMemory memory() const override {
    StateMemory m;
    m.parameters = store_.numel() * 4;
    m.gradients = store_.numel() * 4;
    m.optimizer_state = store_.numel() * 8;
    return m;
  }

  std::string describe() const override {
    return fmt::format(
        "in-app AdamW on {} rank(s), full model states per rank (stage 0; "
        "temporary until zerort's engine)",
        ranks_);
  }

 private:
  // Decay only the tensors that decay (matrices and embeddings).
  void adamw(float lr, float grad_scale) {
    const float c1 = static_cast<float>(1.0 - std::pow(opt_.beta1, double(t_)));
    const float c2 = static_cast<float>(1.0 - std::pow(opt_.beta2, double(t_)));
    for (size_t id = 0; id < store_.tensors().size(); ++id) {
      const float wd =
          store_.tensors()[id].weight_decay ? static_cast<float>(opt_.weight_decay) : 0.0f;
      local_state_kernels::adamw(store_.values_flat(), store_.grads_flat(), m_, v_,
                                 store_.offset(int(id)), store_.offset(int(id) + 1), lr, grad_scale,
                                 static_cast<float>(opt_.beta1), static_cast<float>(opt_.beta2),
                                 static_cast<float>(opt_.eps), c1, c2, wd);
    }
  }

  LocalParameterStore<float> store_;
  OptimizerConfig opt_;
  zrt_comm_h comm_;
  int ranks_ = 1;
  int64_t t_ = 0;
  Kokkos::View<float *, MemSpace> m_, v_;
};

}  // namespace

std::unique_ptr<ModelState> make_local_model_state(const Gpt2Config &config,
                                                   const OptimizerConfig &optimizer,
                                                   zrt_comm_h comm) {
  return std::make_unique<LocalModelState>(config, optimizer, comm);
}

}  // namespace gpt2
