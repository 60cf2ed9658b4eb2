#include "yaml_document.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <regex>
#include <stdexcept>

namespace zrt::nn::model {

bool yaml_supported() {
  return true;
}

namespace {

nlohmann::json scalar(const std::string &text, bool quoted) {
  if (quoted) return text;
  static const std::regex integer(R"([-+]?[0-9]+)");
  static const std::regex real(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (std::regex_match(text, integer)) return std::stoll(text);
  if (std::regex_match(text, real)) return std::stod(text);
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  if (text == "null" || text == "~" || text.empty()) return nullptr;
  return text;
}

nlohmann::json to_json(const YAML::Node &node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json o = nlohmann::json::object();
      for (const auto &kv : node)
        o[kv.first.as<std::string>()] = to_json(kv.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json a = nlohmann::json::array();
      for (const auto &v : node)
        a.push_back(to_json(v));
      return a;
    }
    case YAML::NodeType::Scalar:
      return scalar(node.Scalar(), node.Tag() == "!");
    default:
      return nullptr;
  }
}

}  // namespace

nlohmann::json read_yaml_file(const std::string &path) {
  try {
    return to_json(YAML::LoadFile(path));
  } catch (const YAML::BadFile &) {
    throw std::invalid_argument(fmt::format("model config {}: cannot be opened", path));
  } catch (const YAML::Exception &e) {
    throw std::invalid_argument(
        fmt::format("model config {}: not valid YAML: line {}, column {}: {}", path,
                    e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

}  // namespace zrt::nn::model
