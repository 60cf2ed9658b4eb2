// DeepSpeed's three batch sizes and how they make each other: train_batch_size (samples
// per optimizer step over all ranks) = train_micro_batch_size_per_gpu (per micro-step and
// rank) x gradient_accumulation_steps x ranks. As DeepSpeed's config
// (_set_batch_related_parameters): two of them set the third; train_batch_size alone means
// one micro-step; the micro batch alone means one micro-step too; three given must
// multiply out. The engine takes its accumulation from here, so a file that gives the
// batch sizes alone sets the micro-steps of zrt_engine_step; without either size only the
// accumulation is known (zerort, unlike DeepSpeed, needs no batch size).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace zrt {

struct BatchValue {
  std::optional<int64_t> value;  // nullopt: not given (or "auto" that nothing filled)
  std::string origin;            // where it came from, for messages
};

struct BatchSizes {
  int64_t train_batch = 0;  // 0: unknown (no batch size given)
  int64_t micro_batch = 0;  // 0: unknown
  int64_t accumulation = 1;
};

// Throws Error(ZRT_ERR_CONFIG) naming the keys, their values and origins, and the ranks
// when the given sizes do not multiply out or do not divide. Local.
BatchSizes resolve_batch_sizes(const BatchValue &train_batch, const BatchValue &micro_batch,
                               const BatchValue &accumulation, int ranks);

}  // namespace zrt
