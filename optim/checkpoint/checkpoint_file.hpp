// The object behind zrt_checkpoint_h: a checkpoint file opened serially by a tool (read)
// or created by one (a weights-only checkpoint, for imports).
#pragma once

#include <string>
#include <vector>

#include "optim/checkpoint/h5.hpp"
#include "optim/checkpoint/tensor_names.hpp"
#include "zerort/checkpoint.h"

namespace zrt {

class CheckpointFile {
 public:
  static std::unique_ptr<CheckpointFile> open(const std::string &path);
  static std::unique_ptr<CheckpointFile> create(const std::string &path,
                                                const std::string &metadata);
  ~CheckpointFile();

  int count() const { return static_cast<int>(tensors_.size()); }
  const zrt_checkpoint_tensor_t &tensor(int index) const;
  void read(int index, float *values) const;
  bool verify(int index) const;
  void write(const std::string &name, const std::vector<int64_t> &shape, const float *values);
  void close();  // publish a created file

 private:
  CheckpointFile() = default;
  void add_tensor(const std::string &name);

  std::string path_, tmp_;
  bool writable_ = false, closed_ = false;
  int64_t version_ = 0;
  size_t block_ = 0;  // format 2's checksum block (elements)
  h5::Id file_;
  std::vector<std::string> names_;  // storage for the tensors' name pointers
  std::vector<zrt_checkpoint_tensor_t> tensors_;
  checkpoint::TensorNames written_{"tensor", "written"};  // the names write() was given
};

}  // namespace zrt
