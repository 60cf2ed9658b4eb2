// YAML configuration files as JSON values, where zerort was built with yaml-cpp
// (yaml_document.cpp; yaml_unavailable.cpp otherwise, swapped in as a whole file).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace zrt::nn::model {

/// Whether this build reads YAML.
bool yaml_supported();

/// The document in @p path: mappings become objects, sequences arrays, and scalars numbers,
/// booleans or null where YAML 1.2's core schema reads them so, else strings. Throws
/// std::invalid_argument naming the file, the line and the column of a syntax error.
nlohmann::json read_yaml_file(const std::string &path);

}  // namespace zrt::nn::model
