// A ModelProto serialized with some of its tensors' raw_data supplied while it is written,
// one tensor at a time, rather than held in the message: the bytes SerializeToOstream
// would write for the model with those raw_data filled in, so a model's weights need not
// all be in memory to write it inline. It relies on protobuf writing a message's known
// fields in field-number order, each length-delimited field's size ahead of its bytes:
// the sizes come from the weights' byte counts, known before any value is read.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

namespace onnx {
class ModelProto;
}  // namespace onnx
namespace google::protobuf::io {
class ZeroCopyOutputStream;
}  // namespace google::protobuf::io

namespace zonnx {

/// Receives the next @p size bytes of a raw_data field.
using ByteSink = std::function<void(const char *bytes, size_t size)>;

/// Initializer @p initializer of the model's graph (with no raw_data set) gets @p bytes of
/// raw_data, which @p write passes to its sink when the model is written.
struct StreamedRawData {
  int initializer;
  uint64_t bytes;
  std::function<void(const ByteSink &)> write;
};

/// @p out refused bytes: its owner knows why (the system's reason).
struct StreamFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Serializes @p model to @p out, each of @p tensors' raw_data written by its callback, in
/// the order of the graph's initializers (@p tensors sorted by initializer). Throws
/// std::length_error past protobuf's 2 GB limit (before writing anything), StreamFailed as
/// soon as @p out refuses bytes (no further weight is read), std::runtime_error when a
/// callback passes a number of bytes other than announced, and what a callback throws.
void serialize_streamed(const onnx::ModelProto &model, const std::vector<StreamedRawData> &tensors,
                        google::protobuf::io::ZeroCopyOutputStream &out);

}  // namespace zonnx
