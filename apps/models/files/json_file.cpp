#include "json_file.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "regular_file.hpp"

namespace files {

nlohmann::json read_json_file(const std::filesystem::path &file, const char *what) {
  std::string text;
  try {
    text = files::read_regular(file);
  } catch (const files::Error &e) {
    throw std::invalid_argument(fmt::format("{} {}: {}", what, file.string(), e.reason()));
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception &e) {
    throw std::invalid_argument(
        fmt::format("{} {}: not valid JSON: {}", what, file.string(), e.what()));
  }
}

}  // namespace files
