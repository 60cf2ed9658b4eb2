// The build without ONNX's protobuf classes (libonnx-dev): ONNX exports are refused, saying
// how to get them.
#include "configured_model.hpp"

namespace zrt::nn::model {

void Model::export_onnx(const std::string &) {
  throw StatusError(ZRT_ERR_NOT_SUPPORTED,
                    "this zerort was built without ONNX (libonnx-dev, libprotobuf-dev): export "
                    "safetensors, or rebuild zerort with them");
}

}  // namespace zrt::nn::model
