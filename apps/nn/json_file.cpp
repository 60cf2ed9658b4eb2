#include "json_file.hpp"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>

namespace nn {

nlohmann::json read_json_file(const std::filesystem::path &file, const char *what) {
  std::ifstream in(file);
  if (!in)
    throw std::invalid_argument(fmt::format("{} {}: cannot open the file", what, file.string()));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception &e) {
    throw std::invalid_argument(
        fmt::format("{} {}: not valid JSON: {}", what, file.string(), e.what()));
  }
}

}  // namespace nn
