// The safetensors format (Hugging Face): an 8-byte little-endian header length, a JSON
// header {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then
// the tensors' bytes. The parser trusts nothing in the file: every length, offset, shape
// and dtype is checked before use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

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

// Writes tensors (fp32 values, stored as dtype "F32", "F16" or "BF16") and metadata.
struct Output {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};
void write(const std::string &path, const std::vector<Output> &tensors, const std::string &dtype,
           const std::map<std::string, std::string> &metadata);

std::vector<uint8_t> read_file(const std::string &path);

}  // namespace safetensors
