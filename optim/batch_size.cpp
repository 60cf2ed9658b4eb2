#include "optim/batch_size.hpp"

#include "runtime/error.hpp"

namespace zrt {

namespace {

std::string said(const char *key, const BatchValue &v) {
  return fmt::format("{} {} (from {})", key, *v.value, v.origin);
}

}  // namespace

BatchSizes resolve_batch_sizes(const BatchValue &train, const BatchValue &micro,
                               const BatchValue &accum, int ranks) {
  constexpr const char *kTrain = "train_batch_size", *kMicro = "train_micro_batch_size_per_gpu",
                       *kAccum = "gradient_accumulation_steps";
  const int64_t n = ranks;
  BatchSizes out;
  if (train.value && micro.value && accum.value) {
    out = {*train.value, *micro.value, *accum.value};
    if (out.train_batch != out.micro_batch * out.accumulation * n)
      fail(ZRT_ERR_CONFIG, "{} is not {} x {} x {} rank(s) = {}", said(kTrain, train),
           said(kMicro, micro), said(kAccum, accum), n, out.micro_batch * out.accumulation * n);
  } else if (train.value && micro.value) {
    const int64_t per_step = *micro.value * n;
    if (*train.value % per_step != 0)
      fail(ZRT_ERR_CONFIG,
           "{} does not split into {} x {} rank(s) = {} samples per micro-step: it must be a "
           "multiple of {}",
           said(kTrain, train), said(kMicro, micro), n, per_step, per_step);
    out = {*train.value, *micro.value, *train.value / per_step};
  } else if (train.value && accum.value) {
    const int64_t per_sample = *accum.value * n;
    if (*train.value % per_sample != 0)
      fail(ZRT_ERR_CONFIG,
           "{} does not split into {} x {} rank(s): it must be a multiple of {} to give a "
           "whole micro batch",
           said(kTrain, train), said(kAccum, accum), n, per_sample);
    out = {*train.value, *train.value / per_sample, *accum.value};
  } else if (micro.value && accum.value) {
    out = {*micro.value * *accum.value * n, *micro.value, *accum.value};
  } else if (train.value) {
    if (*train.value % n != 0)
      fail(ZRT_ERR_CONFIG,
           "{} does not split over {} rank(s) (one micro-step, as without "
           "gradient_accumulation_steps): it must be a multiple of {}",
           said(kTrain, train), n, n);
    out = {*train.value, *train.value / n, 1};
  } else if (micro.value) {
    out = {*micro.value * n, *micro.value, 1};
  } else {
    out.accumulation = accum.value.value_or(1);
  }
  constexpr int64_t kMaxAccumulation = int64_t{1} << 20;  // gradient_accumulation_steps' bound
  if (out.accumulation < 1 || out.accumulation > kMaxAccumulation)
    fail(ZRT_ERR_CONFIG,
         "{} and {} give {} micro-steps per optimizer step: accepted values are 1 to {}",
         train.value ? said(kTrain, train) : std::string(kTrain),
         micro.value ? said(kMicro, micro) : std::string(kMicro), out.accumulation,
         kMaxAccumulation);
  return out;
}

}  // namespace zrt
