// What zrt-gpt2 keeps in a checkpoint besides the model states: zerort's checkpoint
// (zerort/checkpoint.h) holds the parameters, AdamW's moments and the optimizer's step; the
// trainer adds, as the checkpoint's metadata (JSON), what a resumed run needs to continue
// exactly where the saved one stopped:
//   {"program": "zrt-gpt2", "model": {n_layer, n_head, n_embd, vocab_size, n_positions, ...},
//    "step": optimizer steps done, "micro_batches": batches each rank's loader has read,
//    "batch", "seq", "ranks", "accumulation_steps", "steps" (planned), "seed", "data"}
// With the same batch, sequence length, ranks and --steps, a resumed run reads the same
// batches and follows the same learning-rate schedule, so in deterministic mode it ends
// bitwise where one uninterrupted run would.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "model/config.hpp"

namespace gpt2 {

struct CheckpointInfo {
  std::filesystem::path path;
  int64_t step = 0;           // optimizer steps done when it was saved
  int64_t micro_batches = 0;  // batches each rank had read
  nlohmann::json metadata;    // all of it, as above
};

/// Reads @p path's description (local: no engine, no MPI) and checks that zrt-gpt2 wrote it
/// for a model of @p config's shape. Throws std::runtime_error naming the file and what
/// differs: a missing or unreadable file, a checkpoint of another program, another model.
CheckpointInfo read_checkpoint_info(const std::filesystem::path &path, const Gpt2Config &config);

}  // namespace gpt2
