// zrt-ckpt without the ONNX protobuf definitions: --format onnx says what to install.
#include <stdexcept>

#include "onnx_export.hpp"

void export_onnx(const OnnxExport &) {
  throw std::runtime_error(
      "--format onnx: this zrt-ckpt was built without ONNX (install libonnx-dev and "
      "libprotobuf-dev, then configure again)");
}
