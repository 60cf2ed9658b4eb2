// Configuration: a schema of typed keys and a resolver that layers four sources.
//
// Precedence, lowest to highest: the schema's default, the JSON file, the values the
// program set in a params struct, and ZRT_* environment variables. The environment wins
// because it is what a job script sets at submission time: a user can change a knob
// without recompiling. Every value remembers its source, which zrt-info shows.
//
// The schema of the whole library is in config_keys.cpp: one table of every knob.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runtime/settings_agreement.hpp"

namespace zrt {

// DoubleList: comma-separated in the environment, a JSON array of numbers in the file.
// Ignored: a key of another tool (DeepSpeed's train_batch_size, say) that zerort accepts
// in a file with a warning, so an existing configuration file works as it is.
enum class ConfigType { Bool, Int, Size, Double, Enum, String, DoubleList, Ignored };

struct ConfigKey {
  std::string name;  // dotted path in the JSON file, e.g. "comm.backend"
  ConfigType type = ConfigType::String;
  std::string default_value;         // as text, parsed like any other source
  std::vector<std::string> choices;  // accepted values of an Enum
  int64_t min = INT64_MIN;           // bounds of Int and Size
  int64_t max = INT64_MAX;
  std::string doc;
  std::string env;                   // environment variable; derived from name if empty
  std::vector<std::string> aliases;  // other names accepted in the JSON file
  // May differ between ranks (log level, binding, pool sizes); every other key must be
  // resolved alike on every rank (runtime/settings_agreement.hpp).
  bool per_rank = false;

  std::string env_name() const;
};

// Builders for schema tables (designated initializers trip -Wmissing-field-initializers).
ConfigKey config_key(std::string name, ConfigType type, std::string default_value, std::string doc);
ConfigKey config_choice(std::string name, std::string default_value,
                        std::vector<std::string> choices, std::string doc);
ConfigKey config_int(std::string name, int64_t default_value, int64_t min, int64_t max,
                     std::string doc);

class ConfigSchema {
 public:
  explicit ConfigSchema(std::vector<ConfigKey> keys);
  // The schema of the whole library (config_keys.cpp).
  static const ConfigSchema &library();

  const ConfigKey *find(std::string_view name) const;  // by name or alias
  const ConfigKey *find_env(std::string_view env) const;
  const std::vector<ConfigKey> &keys() const { return keys_; }
  // The closest known names to an unknown one, for "did you mean" hints.
  std::vector<std::string> suggest(std::string_view unknown) const;
  nlohmann::json to_json() const;

 private:
  std::vector<ConfigKey> keys_;
};

enum class ConfigSource { Default, File, Params, Environment };
const char *source_name(ConfigSource source);

using ConfigValue = std::variant<bool, int64_t, double, std::string, std::vector<double>>;

// Parses text as the key's type; throws Error(ZRT_ERR_CONFIG) naming the key, where the
// value came from, and the accepted values.
ConfigValue parse_config_value(const ConfigKey &key, std::string_view text,
                               std::string_view origin);

class Config {
 public:
  // Resolves every key of schema. file_path may be empty (no file); params are the
  // program's settings by key name; env is a NULL-terminated environ-style array.
  static Config resolve(const ConfigSchema &schema, const std::string &file_path,
                        const std::map<std::string, std::string> &params, char **env);

  // A copy with more program settings (e.g. an engine's params struct) layered in at
  // Params precedence; the environment still wins.
  Config with_params(const std::map<std::string, std::string> &params) const;

  bool get_bool(std::string_view name) const;
  int64_t get_int(std::string_view name) const;
  double get_double(std::string_view name) const;
  const std::string &get_string(std::string_view name) const;  // also Enum
  const std::vector<double> &get_doubles(std::string_view name) const;
  ConfigSource source(std::string_view name) const;
  const std::string &file_path() const { return file_path_; }
  // Keys of the file that the schema accepts but ignores (other tools' keys).
  const std::vector<std::string> &ignored_keys() const { return ignored_; }

  // {key: {"value": ..., "source": ...}} for zerort's own keys (not the ignored ones).
  nlohmann::json to_json() const;
  // Every key that must be alike on every rank, with its value and source, by name.
  std::vector<Setting> agreed_settings() const;

 private:
  struct Entry {
    const ConfigKey *key = nullptr;
    ConfigValue value;
    ConfigSource source = ConfigSource::Default;
  };
  const Entry &entry(std::string_view name) const;
  void apply(const ConfigKey &key, std::string_view text, ConfigSource source,
             std::string_view origin);

  const ConfigSchema *schema_ = nullptr;
  std::map<std::string, Entry, std::less<>> entries_;
  std::map<std::string, std::string> env_texts_;  // kept so with_params re-applies them
  std::string file_path_;
  std::vector<std::string> ignored_;
};

}  // namespace zrt
