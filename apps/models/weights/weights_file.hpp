// A file of weights read one tensor at a time, whatever wrote it: a safetensors file
// (mapped, so a tensor costs its own bytes only) or a zerort checkpoint (an engine's, whose
// params/ tensors are the weights, or a weights-only one from zrt-ckpt export or
// import-safetensors). Values come as fp32.
#pragma once

#include <zerort/zerort.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace weights {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A zerort checkpoint opened for reading (zrt_checkpoint_open), closed on scope exit.
/// Throws Error with zerort's message.
class CheckpointReader {
 public:
  explicit CheckpointReader(const std::string &path);
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader &) = delete;
  CheckpointReader &operator=(const CheckpointReader &) = delete;

  int count() const;
  zrt_checkpoint_tensor_t tensor(int i) const;
  std::vector<float> read(int i) const;
  /// Whether tensor @p i matches its checksum (true for a tensor stored without one).
  bool verify(int i) const;

 private:
  zrt_checkpoint_h h_ = nullptr;
};

struct StoredTensor {
  std::string name;  // as the file names it (params/ left out for an engine checkpoint)
  std::vector<int64_t> shape;
};

class WeightsFile {
 public:
  /// Opens @p path and reads its list of tensors. Throws Error naming the path.
  explicit WeightsFile(const std::filesystem::path &path);
  ~WeightsFile();
  WeightsFile(WeightsFile &&) noexcept;
  WeightsFile &operator=(WeightsFile &&) noexcept;

  const std::filesystem::path &path() const { return path_; }
  bool is_safetensors() const { return safetensors_ != nullptr; }
  const std::vector<StoredTensor> &tensors() const { return tensors_; }
  /// Tensor @p index's values as fp32; a zerort tensor's checksum is verified. Throws Error
  /// naming the tensor.
  std::vector<float> read(size_t index) const;

 private:
  struct Mapped;
  std::filesystem::path path_;
  std::unique_ptr<Mapped> safetensors_;
  std::unique_ptr<CheckpointReader> checkpoint_;
  std::vector<int> checkpoint_index_;  // of each tensor in the checkpoint
  std::vector<StoredTensor> tensors_;
};

}  // namespace weights
