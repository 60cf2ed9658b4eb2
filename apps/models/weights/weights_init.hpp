// --init-from: a model's weights from a file, with fresh optimizer state at step 0. The
// file's tensors are matched to the model's by name (ours, or Hugging Face's through the
// model's table in hf_names.hpp) and by shape before a value is read, so a file of another
// model or configuration is refused at set-up, naming the tensors.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "hf_names.hpp"
#include "weights_file.hpp"

namespace weights {

struct ModelTensor {
  std::string name;
  std::vector<int64_t> shape;
};

class WeightsInit {
 public:
  /// Opens @p path and matches its tensors to @p model (the model's parameters in its
  /// layout order). Throws std::invalid_argument saying what does not match: tensors the
  /// model lacks, tensors the file lacks, shapes that differ.
  WeightsInit(const std::filesystem::path &path, ModelKind kind, std::vector<ModelTensor> model);

  /// Reads each of the model's tensors from the file, one at a time, in the model's layout
  /// (transposed where the file stores it the other way), and passes it to
  /// @p set(model index, values).
  void load(const std::function<void(int, const float *)> &set) const;

  /// "a safetensors file in Hugging Face's names: 148 tensors, 12 buffers skipped"
  std::string description() const;

 private:
  struct Source {
    size_t index = 0;  // in the file
    bool transposed = false;
  };
  WeightsFile file_;
  ModelKind kind_;
  std::vector<ModelTensor> model_;
  std::vector<Source> sources_;  // per model tensor
  int hf_names_ = 0, skipped_ = 0;
};

}  // namespace weights
