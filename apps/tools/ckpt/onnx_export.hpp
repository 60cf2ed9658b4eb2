// zrt-ckpt export --format onnx: the model's inference graph with the checkpoint's weights,
// written to OUTPUT.partial and renamed (a failure leaves no file behind). onnx_export.cpp
// does it where the ONNX protobuf definitions are installed; onnx_unavailable.cpp, built
// instead elsewhere, refuses saying what to install.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "hf_names.hpp"

struct OnnxExport {
  std::string checkpoint, output;
  weights::ModelKind kind;
  nlohmann::json model;   // the checkpoint's metadata "model": the model's shape
  bool external = false;  // weights in OUTPUT.data (forced past 1.5 GB)
  bool fp16 = false;      // weights stored fp16, cast to fp32 where read
};

/// Throws std::runtime_error (or std::invalid_argument for weights that do not fit).
void export_onnx(const OnnxExport &e);
