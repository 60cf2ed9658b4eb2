// The safetensors format (Hugging Face): an 8-byte little-endian header length, a JSON
// header {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then
// the tensors' bytes. The parser trusts nothing in the file: every length, offset, shape
// and dtype is checked before use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "files/output_file.hpp"

namespace safetensors {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Tensor {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", "F64", ...
  std::vector<int64_t> shape;
  size_t offset = 0, length = 0;  // within the data section
};

struct File {
  std::vector<Tensor> tensors;  // in data order
  std::map<std::string, std::string> metadata;
  size_t data_start = 0;  // offset of the data section in the file
};

// Bytes per element of a dtype, 0 if unknown.
size_t dtype_size(const std::string &dtype);

// Parses and validates the header of a whole file held in memory. Throws Error.
File parse(const uint8_t *bytes, size_t size);

// Converts a tensor's bytes (F32, F16, BF16, F64) to fp32. Throws Error for other dtypes.
std::vector<float> to_float(const Tensor &t, const uint8_t *data_section);

// A file being written one tensor at a time: the header first, from the tensors' names and
// shapes (no value is needed to know where each one's bytes go), then each tensor's fp32
// values, in the order given, converted on the way to dtype "F32", "F16" or "BF16" a block
// at a time. Written as PATH.partial and renamed by finish(), so a failed export leaves no
// file (and an earlier one whole); a failed write says why in the system's words ("No
// space left on device").
struct Entry {
  std::string name;
  std::vector<int64_t> shape;
};
class Writer {
 public:
  /// Writes the header. Throws Error (and leaves no file).
  Writer(const std::string &path, const std::vector<Entry> &tensors, const std::string &dtype,
         const std::map<std::string, std::string> &metadata);
  ~Writer();
  Writer(const Writer &) = delete;
  Writer &operator=(const Writer &) = delete;
  /// The next @p count values (of the current tensor, or running into the next ones).
  void append(const float *values, size_t count);
  /// Checks that every tensor's values came, closes and renames. Throws Error.
  void finish();

 private:
  std::string path_, partial_;
  std::unique_ptr<files::OutputFile> out_;
  size_t esize_ = 0, expected_ = 0, written_ = 0;  // in values
  std::string dtype_;
  std::vector<uint16_t> half_;  // one block, converted
  bool done_ = false;

  void write(const void *bytes, size_t size);  // Error with the system's reason
};

std::vector<uint8_t> read_file(const std::string &path);

}  // namespace safetensors
