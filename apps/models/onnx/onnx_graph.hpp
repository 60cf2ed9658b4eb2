// An ONNX model built with ONNX's own protobuf classes (Debian's libonnx-dev: ONNX 1.12, IR
// version 8, opset 17), not by writing bytes by hand: nodes, int64 constants and fp32
// weights, inputs and outputs with named (dynamic) dimensions. A weight's values are not
// held: each is read when the model is written, one at a time, and its bytes go straight
// out, to a side file in ONNX's external-data format (models past protobuf's 2 GB limit)
// or inline into the model's own bytes (model_stream.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "files/output_file.hpp"
#include "tensor_blocks.hpp"

namespace onnx {
class ModelProto;
class GraphProto;
}  // namespace onnx

namespace zonnx {

/// A node attribute: an int, a float or a list of ints.
struct Attr {
  std::string name;
  std::variant<int64_t, float, std::vector<int64_t>> value;
};

/// A dimension: a size, or a name for a dynamic one ("batch").
using Dim = std::variant<int64_t, std::string>;

enum class ElemType { float32, int64 };

class OnnxGraph {
 public:
  /// @p external_data: the side file's name, beside the model ("model.onnx.data"); empty
  /// for weights inline. @p fp16_weights: weights stored as fp16 (half the file), each cast
  /// to fp32 where the graph reads it, so the graph computes in fp32 either way.
  OnnxGraph(const std::string &name, const std::filesystem::path &model_path,
            const std::string &external_data, bool fp16_weights = false);
  ~OnnxGraph();
  OnnxGraph(const OnnxGraph &) = delete;
  OnnxGraph &operator=(const OnnxGraph &) = delete;

  void input(const std::string &name, ElemType type, const std::vector<Dim> &dims);
  void output(const std::string &name, ElemType type, const std::vector<Dim> &dims);

  /// Passes a weight's fp32 values, row-major, to the sink (in one call or in blocks).
  using WeightValues = std::function<void(const weights::BlockSink &)>;
  /// An fp32 weight (initializer) named @p name of @p shape, whose values @p values gives
  /// when the model is written; returns the name of its fp32 value (@p name, or its Cast's
  /// output with fp16 weights).
  std::string weight(const std::string &name, const std::vector<int64_t> &shape,
                     WeightValues values);
  /// An int64 constant of @p shape (empty: a scalar); returns its name.
  std::string ints(const std::vector<int64_t> &values, const std::vector<int64_t> &shape);
  /// An fp32 scalar constant; returns its name.
  std::string scalar(float value);

  /// A node of @p op with one output, named after @p hint and numbered; returns it.
  std::string node(const std::string &op, const std::vector<std::string> &inputs,
                   const std::string &hint, const std::vector<Attr> &attrs = {});
  /// A node with @p outputs outputs; returns their names.
  std::vector<std::string> nodes(const std::string &op, const std::vector<std::string> &inputs,
                                 const std::string &hint, int outputs,
                                 const std::vector<Attr> &attrs = {});
  /// Renames the output @p value to @p name (an Identity node), for a graph output.
  void name_output(const std::string &value, const std::string &name);

  /// Reads the weights one at a time and writes their bytes, to the side file (written as
  /// NAME.partial and moved to its name) or inline; serializes the model to @p path. A
  /// graph destroyed unwritten removes its side file. Throws std::runtime_error when the
  /// model cannot be written (past 2 GB inline: use external data; a file that cannot be
  /// written, in the system's words: "PATH: cannot write: No space left on device"), or
  /// what a weight's values throw.
  void write(const std::filesystem::path &path);

  /// Bytes of weights so far.
  int64_t weight_bytes() const { return weight_bytes_; }

 private:
  struct Pending {
    int initializer;  // in the graph
    int64_t count;    // values
    WeightValues values;
  };
  /// Pending weight @p p's bytes (fp32 or fp16), to @p write in blocks.
  void write_weight(const Pending &p, const std::function<void(const char *, size_t)> &write);

  std::unique_ptr<onnx::ModelProto> model_;
  std::vector<Pending> pending_;
  onnx::GraphProto *graph_;
  std::string external_name_;
  std::filesystem::path external_path_;
  std::unique_ptr<files::OutputFile> external_;  // the side file, until write() closes it
  int64_t external_offset_ = 0, weight_bytes_ = 0;
  bool fp16_ = false;
  int next_ = 0;
};

}  // namespace zonnx
