// What the trainers (zrt-gpt2, zrt-bert) keep in a checkpoint besides the model states:
// zerort's checkpoint (zerort/checkpoint.h) holds the parameters, the optimizer's moments and
// its step; the trainer adds, as the checkpoint's metadata (JSON), what a resumed run needs
// to continue exactly where the saved one stopped:
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
#include <vector>

#include <nlohmann/json.hpp>

namespace training {

struct CheckpointInfo {
  std::filesystem::path path;
  int64_t step = 0;           // optimizer steps done when it was saved
  int64_t micro_batches = 0;  // batches each rank had read
  nlohmann::json metadata;    // all of it, as above
};

/// @p save_path with "{step}" replaced by the step, 8 digits ("ckpt-{step}.h5" ->
/// "ckpt-00000500.h5"), as zerort's checkpoint names the file it writes.
std::filesystem::path checkpoint_path(const std::filesystem::path &save_path, int64_t step);

/// Creates the folder of @p save_path if needed, so that a run finds out at start-up, not
/// after hours of training, that it cannot save. Throws std::runtime_error naming it.
void check_save_folder(const std::filesystem::path &save_path);

/// What a trainer resumes from: its own checkpoints, of a model of the same shape.
struct CheckpointOwner {
  std::string program;                  // "zrt-gpt2": the metadata's "program"
  std::string model_kind;               // "GPT-2", for messages
  nlohmann::json model;                 // this run's model (its config's to_json())
  std::vector<std::string> shape_keys;  // the model's fields that fix parameter shapes
};

/// Reads @p path's description (local: no engine, no MPI) and checks that @p owner's
/// program wrote it for a model of the same shape. Throws std::runtime_error naming the file
/// and what differs: a missing or unreadable file, a checkpoint of another program (or none),
/// another model.
CheckpointInfo read_checkpoint_info(const std::filesystem::path &path,
                                    const CheckpointOwner &owner);

}  // namespace training
