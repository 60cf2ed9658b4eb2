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
// Block: a JSON object kept whole (DeepSpeed's "tensorboard": {...}), checked by its use.
enum class ConfigType { Bool, Int, Size, Double, Enum, String, DoubleList, Block };

// What zerort does with a key. DeepSpeed's ds_config.json holds many keys for features
// zerort does differently or not at all; none of them is accepted and then ignored:
//  - Acts: the value changes what zerort does;
//  - Only: accepted with the values that describe what zerort always does (`only`, or a
//    check where the key is used when `only` is empty, e.g. "equal to the compute dtype"),
//    any other value is an error that says why;
//  - Refused: never accepted; the doc says why and what to do instead;
//  - Disabled: a block of a feature zerort lacks (DeepSpeed's tensorboard, amp, ...),
//    accepted when it is off ("enabled": false, or every flag false), an error when on.
enum class KeyUse { Acts, Only, Refused, Disabled };
const char *key_use_name(KeyUse use);  // "acts", "only", "refused", "disabled"

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
  // A setting of an engine (zrt_engine_params_t's settings may set it), not of the context.
  bool engine = false;
  // A key of DeepSpeed's ds_config.json (zrt-info --config-keys says what each does here).
  bool deepspeed = false;
  KeyUse use = KeyUse::Acts;
  std::vector<std::string> only;  // KeyUse::Only: the accepted values, as text
  // Non-empty: "auto" is accepted (as in a Hugging Face Trainer's ds_config.json), and this
  // says what it becomes: the program's value (an engine's params), else auto_value.
  std::string auto_doc;
  // What "auto" resolves to when the program does not supply the value; empty: then it is
  // an error naming the key.
  std::string auto_value;

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

using ConfigValue =
    std::variant<bool, int64_t, double, std::string, std::vector<double>, nlohmann::json>;

// Parses text as the key's type; throws Error(ZRT_ERR_CONFIG) naming the key, where the
// value came from, and the accepted values. Checks the key's use (KeyUse) too: a refused
// key, a value outside `only`, a disabled block that is on, "auto" where it is not taken.
ConfigValue parse_config_value(const ConfigKey &key, std::string_view text,
                               std::string_view origin);

// The keys of a JSON object, flattened to dotted names the schema knows (a Block keeps its
// object), with their values as text: what a file or an engine's settings hold. Throws
// Error(ZRT_ERR_CONFIG) for an unknown key (with the nearest names) or a value of the
// wrong shape; where names the object in messages.
std::vector<std::pair<const ConfigKey *, std::string>> config_entries(const ConfigSchema &schema,
                                                                      const nlohmann::json &j,
                                                                      std::string_view where);

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
  const nlohmann::json &get_block(std::string_view name) const;  // Block: the object
  ConfigSource source(std::string_view name) const;
  // Where the value came from, for messages: the file's path, the variable, "the params
  // struct", "the built-in default".
  std::string origin(std::string_view name) const;
  // The value is "auto" and nothing (the program's params) replaced it. The getters then
  // return the key's auto_value, or throw Error(ZRT_ERR_CONFIG) naming the key and what
  // "auto" needs when it has none.
  bool is_auto(std::string_view name) const;
  const std::string &file_path() const { return file_path_; }

  // {key: {"value": ..., "source": ...}} for every key ("auto" where it is).
  nlohmann::json to_json() const;
  // Every key that must be alike on every rank, with its value and source, by name.
  std::vector<Setting> agreed_settings() const;

 private:
  struct Entry {
    const ConfigKey *key = nullptr;
    ConfigValue value;
    ConfigSource source = ConfigSource::Default;
    std::string origin;  // as messages name the source
    bool is_auto = false;
  };
  const Entry &entry(std::string_view name) const;
  // The entry, whose value is the key's auto_value when it is "auto" (or an error when the
  // key has none).
  const Entry &value_entry(std::string_view name) const;
  void apply(const ConfigKey &key, std::string_view text, ConfigSource source,
             std::string_view origin);

  const ConfigSchema *schema_ = nullptr;
  std::map<std::string, Entry, std::less<>> entries_;
  std::map<std::string, std::string> env_texts_;  // kept so with_params re-applies them
  std::string file_path_;
};

}  // namespace zrt
