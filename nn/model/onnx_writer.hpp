// What a layer needs to put itself into an ONNX graph (zrt_model_export), apart from how the
// graph is written (model_onnx.cpp, with ONNX's own protobuf classes): nodes by operator
// name, constants, and its parameters as initializers by their tensor ids.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace zrt::nn::model {

/// A node attribute: an int, a float, or a list of ints.
struct OnnxAttr {
  std::string name;
  std::variant<int64_t, float, std::vector<int64_t>> value;
};

class OnnxWriter {
 public:
  virtual ~OnnxWriter() = default;
  /// Adds node @p op; returns the name of its first output, made unique from @p name. A
  /// node of several @p outputs names the others by the first and ":1", ":2", ...
  virtual std::string node(const std::string &op, const std::vector<std::string> &inputs,
                           const std::string &name, const std::vector<OnnxAttr> &attrs = {},
                           int outputs = 1) = 0;
  /// A parameter tensor of the model (its id in the layout) as an initializer; returns
  /// its name.
  virtual std::string parameter(int id) = 0;
  /// An int64 constant; returns its name.
  virtual std::string ints(const std::string &name, const std::vector<int64_t> &values) = 0;
  /// A float constant of @p shape; returns its name.
  virtual std::string floats(const std::string &name, const std::vector<int64_t> &shape,
                             const std::vector<float> &values) = 0;
  /// A float scalar constant; returns its name.
  virtual std::string scalar(const std::string &name, float value) = 0;
};

}  // namespace zrt::nn::model
