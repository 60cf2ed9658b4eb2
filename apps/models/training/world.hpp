// A trainer's place in the job, as its loop and model see it.
#pragma once

#include <zerort/zerort.h>

namespace training {

/// This process's place in the job; comm is null for a lone process. context is the zerort
/// context whose memory the activations are checked against and whose pinned host memory
/// takes offloaded activations (GPT-2's --offload-activations).
struct World {
  int rank = 0, size = 1;
  zrt_comm_h comm = nullptr;
  zrt_context_h context = nullptr;
};

}  // namespace training
