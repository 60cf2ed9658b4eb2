// The context's configuration as the public API shows it (zrt_context_describe's "config"
// and zrt_config_schema): each key's value and where it came from, so that a trainer knows
// what the configuration file (ZRT_CONFIG) or the environment says before it asks the
// engine for anything, and can leave those keys to them.
#pragma once

#include <zerort/zerort.h>
#include <nlohmann/json.hpp>

#include <string>

namespace training {

class ConfigView {
 public:
  /// Reads @p context's configuration. Local; throws std::runtime_error with zerort's message.
  explicit ConfigView(zrt_context_h context);

  /// The key's value (a JSON value; "auto" where the file says so).
  const nlohmann::json &value(const std::string &key) const;
  /// "default", "file", "params" or "environment".
  std::string source(const std::string &key) const;
  /// The file or the environment gives the key a value of its own (not "auto").
  bool set_outside(const std::string &key) const;
  /// The file (or the environment) says "auto": the program is to fill it.
  bool is_auto(const std::string &key) const;
  /// Where a key set outside the program came from, as the trainers print it: "from
  /// s3.json" (the file's name), or the environment variable ("ZRT_ZERO_STAGE").
  std::string origin(const std::string &key) const;
  /// Whether @p key is a setting of an engine (zrt-info --config-keys --json's "engine").
  bool engine_key(const std::string &key) const;
  /// Whether @p text (a value as zrt_engine_describe writes it) is the key's default.
  bool is_default(const std::string &key, const std::string &text) const;
  const std::string &file() const { return file_; }

 private:
  nlohmann::json config_;  // {key: {"value", "source"}}
  nlohmann::json schema_;  // {key: schema entry}
  std::string file_;
};

}  // namespace training
