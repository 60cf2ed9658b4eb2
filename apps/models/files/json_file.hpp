// Reading a model's JSON configuration file, with messages that name it.
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

namespace files {

/// The JSON value in @p file. Throws std::invalid_argument "WHAT FILE: REASON" (the
/// system's, or "it is a FIFO (named pipe), not a regular file": files/regular_file.hpp)
/// or "WHAT FILE: not valid JSON: ...".
nlohmann::json read_json_file(const std::filesystem::path &file, const char *what);

}  // namespace files
