// The build without yaml-cpp: YAML files are refused, saying how to get them read.
#include <fmt/format.h>

#include <stdexcept>

#include "yaml_document.hpp"

namespace zrt::nn::model {

bool yaml_supported() {
  return false;
}

nlohmann::json read_yaml_file(const std::string &path) {
  throw std::invalid_argument(fmt::format(
      "model config {}: this zerort was built without yaml-cpp (libyaml-cpp-dev), so it reads "
      "JSON only: write the file as JSON, or rebuild zerort with yaml-cpp",
      path));
}

}  // namespace zrt::nn::model
