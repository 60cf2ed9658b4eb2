// Checkpoints (zerort/checkpoint.h). The layout of a file:
//
//   /                          attributes: format_version, zerort_version, step, stage,
//                              world_size, compute_dtype, optimizer (JSON: type and
//                              hyper-parameters), loss_scaler (JSON), config (JSON),
//                              metadata (the program's JSON), optimizer_state (kind)
//   /params/NAME               fp32 master weights, the parameter's full shape
//   /optimizer/exp_avg/NAME    Adam/AdamW/LAMB first moment       (or, for SGD with
//   /optimizer/exp_avg_sq/NAME Adam/AdamW/LAMB second moment       momentum,
//                                                                  /optimizer/momentum_buffer)
// Format 2: every dataset is contiguous, and its checksums are per block of a fixed grid
// (block_checksums.hpp): the attribute xxh3_blocks, and xxh3 for the whole dataset. Format
// 1 files (xxh3 alone: XXH3-64 of the fp32 values in row-major order) still load.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zrt {

class Engine;

namespace checkpoint {

class BackgroundSave;

inline constexpr int64_t kFormatVersion = 2;

// "{step}" in pattern becomes the step, zero-padded to 8 digits.
std::string expand_path(const std::string &pattern, int64_t step);

// Collective over the engine's ranks.
void save(Engine &engine, const std::string &path, const std::string &metadata, int keep_last);
void load(Engine &engine, const std::string &path);
// Collective: copies the state and returns; the engine keeps the save pending (it settles
// at the next step, save, load or destroy).
std::shared_ptr<BackgroundSave> save_async(Engine &engine, const std::string &path,
                                           const std::string &metadata, int keep_last);

// Local, serial: the file's root attributes as JSON.
nlohmann::json describe(const std::string &path);

// XXH3-64 of a dataset's values as fp32, row-major, read in chunks.
uint64_t dataset_hash(int64_t dataset_id);

// Dataset names: "params/NAME", "optimizer/exp_avg/NAME", ...
std::string params_name(const std::string &param);
std::vector<std::string> state_names(const std::string &optimizer_state);  // kinds of moments

}  // namespace checkpoint
}  // namespace zrt
