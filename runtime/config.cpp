#include "runtime/config.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "runtime/error.hpp"
#include "runtime/regular_file.hpp"

namespace zrt {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char &c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return std::string(s.substr(b, e - b));
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1u : 0u)});
      diag = up;
    }
  }
  return row[b.size()];
}

const char *type_name(ConfigType t) {
  switch (t) {
    case ConfigType::Bool:
      return "bool";
    case ConfigType::Int:
      return "int";
    case ConfigType::Size:
      return "size";
    case ConfigType::Double:
      return "double";
    case ConfigType::Enum:
      return "enum";
    case ConfigType::String:
      return "string";
    case ConfigType::DoubleList:
      return "list";
    case ConfigType::Block:
      return "block";
  }
  return "?";
}

std::string accepted(const ConfigKey &key) {
  switch (key.type) {
    case ConfigType::Bool:
      return "accepted values are true/false, 1/0, yes/no, on/off";
    case ConfigType::Enum:
      return fmt::format("accepted values are {}", fmt::join(key.choices, ", "));
    case ConfigType::Int:
      if (key.min == INT64_MIN && key.max == INT64_MAX) return "accepted values are integers";
      if (key.max == INT64_MAX) return fmt::format("accepted values are integers >= {}", key.min);
      return fmt::format("accepted values are integers in [{}, {}]", key.min, key.max);
    case ConfigType::Size:
      return fmt::format(
          "accepted values are byte counts in [{}, {}], with an optional suffix K, M, G (x1024)",
          key.min, key.max);
    case ConfigType::Double:
      return "accepted values are real numbers";
    case ConfigType::String:
      return "any string is accepted";
    case ConfigType::DoubleList:
      if (key.min == key.max)
        return fmt::format(
            "accepted values are {} real numbers, as a JSON array or separated by "
            "commas",
            key.min);
      return "accepted values are real numbers, as a JSON array or separated by commas";
    case ConfigType::Block:
      return "accepted values are JSON objects";
  }
  return "";
}

[[noreturn]] void bad_value(const ConfigKey &key, std::string_view text, std::string_view origin) {
  fail(ZRT_ERR_CONFIG, "bad value '{}' for {} (from {}): {}", text, key.name, origin,
       accepted(key));
}

int64_t parse_integer(const ConfigKey &key, std::string_view text, std::string_view origin,
                      bool with_suffix) {
  std::string t = trim(text);
  if (t.empty()) bad_value(key, text, origin);
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (errno == ERANGE || end == t.c_str()) bad_value(key, text, origin);
  if (*end == '.' || *end == 'e' || *end == 'E') {
    // An integral value written as a real number, as DeepSpeed configurations do ("5e8").
    char *real_end = nullptr;
    double d = std::strtod(t.c_str(), &real_end);
    if (*real_end != '\0' || !std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e18)
      bad_value(key, text, origin);
    v = static_cast<long long>(d);
    end = real_end;
  }
  std::string suffix = lower(end);
  int64_t scale = 1;
  if (with_suffix && !suffix.empty()) {
    if (suffix == "k" || suffix == "kb" || suffix == "kib")
      scale = int64_t{1} << 10;
    else if (suffix == "m" || suffix == "mb" || suffix == "mib")
      scale = int64_t{1} << 20;
    else if (suffix == "g" || suffix == "gb" || suffix == "gib")
      scale = int64_t{1} << 30;
    else
      bad_value(key, text, origin);
  } else if (!suffix.empty()) {
    bad_value(key, text, origin);
  }
  if (v != 0 && (v > INT64_MAX / scale || v < INT64_MIN / scale)) bad_value(key, text, origin);
  int64_t r = static_cast<int64_t>(v) * scale;
  if (r < key.min || r > key.max) bad_value(key, text, origin);
  return r;
}

// Flattens nested objects of a JSON file into dotted keys; a Block keeps its whole object
// (DeepSpeed's "tensorboard": {...}, say).
void flatten(const ConfigSchema &schema, const nlohmann::json &j, const std::string &prefix,
             std::vector<std::pair<std::string, const nlohmann::json *>> &out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string name = prefix.empty() ? it.key() : prefix + "." + it.key();
    const ConfigKey *key = schema.find(name);
    bool whole = key != nullptr && (key->type == ConfigType::Block || key->use == KeyUse::Refused);
    if (it->is_object() && !whole)
      flatten(schema, *it, name, out);
    else
      out.emplace_back(name, &*it);
  }
}

std::string json_scalar_text(const nlohmann::json &v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// "auto" as a Hugging Face Trainer's ds_config.json writes it, unless it is one of the
// key's own values (comm.backend's auto, say) or the key is free text.
bool is_auto_text(const ConfigKey &key, std::string_view text) {
  if (key.type == ConfigType::String) return false;
  if (std::find(key.choices.begin(), key.choices.end(), "auto") != key.choices.end()) return false;
  return lower(trim(text)) == "auto";
}

std::string joined_only(const ConfigKey &key) {
  std::vector<std::string> shown;
  for (const std::string &v : key.only)
    shown.push_back(key.type == ConfigType::Enum || key.type == ConfigType::String
                        ? fmt::format("\"{}\"", v)
                        : v);
  return fmt::format("{}", fmt::join(shown, " or "));
}

// A Disabled block must be off: "enabled" false (or "auto", which a Hugging Face Trainer
// turns on only for apex), or, without "enabled", every flag false.
void check_disabled(const ConfigKey &key, const nlohmann::json &block, std::string_view origin) {
  auto on = [&](const std::string &what) {
    fail(ZRT_ERR_CONFIG, "{} (from {}) turns on {}: {}", key.name, origin, what, key.doc);
  };
  if (block.contains("enabled")) {
    const nlohmann::json &e = block["enabled"];
    if (e.is_boolean() ? e.get<bool>() : !(e.is_string() && lower(e.get<std::string>()) == "auto"))
      on(fmt::format("{}.enabled ({})", key.name, e.dump()));
    return;
  }
  for (auto it = block.begin(); it != block.end(); ++it)
    if (it->is_boolean() && it->get<bool>()) on(fmt::format("{}.{}", key.name, it.key()));
}

}  // namespace

const char *key_use_name(KeyUse use) {
  switch (use) {
    case KeyUse::Acts:
      return "acts";
    case KeyUse::Only:
      return "only";
    case KeyUse::Refused:
      return "refused";
    case KeyUse::Disabled:
      return "disabled";
  }
  return "?";
}

ConfigKey config_key(std::string name, ConfigType type, std::string default_value,
                     std::string doc) {
  ConfigKey k;
  k.name = std::move(name);
  k.type = type;
  k.default_value = std::move(default_value);
  k.doc = std::move(doc);
  return k;
}

ConfigKey config_choice(std::string name, std::string default_value,
                        std::vector<std::string> choices, std::string doc) {
  ConfigKey k =
      config_key(std::move(name), ConfigType::Enum, std::move(default_value), std::move(doc));
  k.choices = std::move(choices);
  return k;
}

ConfigKey config_int(std::string name, int64_t default_value, int64_t min, int64_t max,
                     std::string doc) {
  ConfigKey k =
      config_key(std::move(name), ConfigType::Int, std::to_string(default_value), std::move(doc));
  k.min = min;
  k.max = max;
  return k;
}

std::string ConfigKey::env_name() const {
  if (!env.empty()) return env;
  std::string e = "ZRT_";
  for (char c : name)
    e += c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return e;
}

ConfigSchema::ConfigSchema(std::vector<ConfigKey> keys) : keys_(std::move(keys)) {}

const ConfigKey *ConfigSchema::find(std::string_view name) const {
  for (const ConfigKey &k : keys_) {
    if (k.name == name) return &k;
    for (const std::string &a : k.aliases)
      if (a == name) return &k;
  }
  return nullptr;
}

const ConfigKey *ConfigSchema::find_env(std::string_view env) const {
  for (const ConfigKey &k : keys_)
    if (k.env_name() == env) return &k;
  return nullptr;
}

std::vector<std::string> ConfigSchema::suggest(std::string_view unknown) const {
  std::vector<std::pair<size_t, std::string>> scored;
  std::string u = lower(unknown);
  for (const ConfigKey &k : keys_) {
    for (const std::string &candidate : {k.name, k.env_name()}) {
      size_t d = edit_distance(u, lower(candidate));
      if (d <= std::max<size_t>(2, candidate.size() / 4)) scored.emplace_back(d, candidate);
    }
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (auto &[d, name] : scored)
    if (out.size() < 3 && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  return out;
}

nlohmann::json ConfigSchema::to_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const ConfigKey &k : keys_) {
    nlohmann::json j{{"name", k.name},
                     {"env", k.env_name()},
                     {"type", type_name(k.type)},
                     {"default", k.default_value},
                     {"doc", k.doc}};
    if (!k.choices.empty()) j["choices"] = k.choices;
    if (!k.aliases.empty()) j["aliases"] = k.aliases;
    if (k.per_rank) j["per_rank"] = true;
    if (k.type == ConfigType::Int || k.type == ConfigType::Size) {
      if (k.min != INT64_MIN) j["min"] = k.min;
      if (k.max != INT64_MAX) j["max"] = k.max;
    }
    j["use"] = key_use_name(k.use);
    if (!k.only.empty()) j["only"] = k.only;
    if (!k.auto_doc.empty()) j["auto"] = k.auto_doc;
    if (k.engine) j["engine"] = true;
    if (k.deepspeed) j["deepspeed"] = true;
    out.push_back(std::move(j));
  }
  return out;
}

const char *source_name(ConfigSource source) {
  switch (source) {
    case ConfigSource::Default:
      return "default";
    case ConfigSource::File:
      return "file";
    case ConfigSource::Params:
      return "params";
    case ConfigSource::Environment:
      return "environment";
  }
  return "?";
}

namespace {

ConfigValue parse_typed(const ConfigKey &key, std::string_view text, std::string_view origin);

}  // namespace

ConfigValue parse_config_value(const ConfigKey &key, std::string_view text,
                               std::string_view origin) {
  if (key.use == KeyUse::Refused)
    fail(ZRT_ERR_CONFIG, "{} (from {}) is not supported: {}", key.name, origin, key.doc);
  if (is_auto_text(key, text)) {
    if (key.auto_doc.empty())
      fail(ZRT_ERR_CONFIG,
           "{} is \"auto\" (from {}), but zerort fills \"auto\" only where a value follows "
           "from the job (batch sizes, bucket sizes, the dtype, the optimizer's and the "
           "scheduler's values: zrt-info --config-keys marks them); give {} a value: {}",
           key.name, origin, key.name, accepted(key));
    // Without an auto_value the value must come from the program: reading it before then
    // is the error (Config::value_entry).
    return parse_typed(key, key.auto_value.empty() ? key.default_value : key.auto_value, origin);
  }
  ConfigValue v = parse_typed(key, text, origin);
  if (key.use == KeyUse::Only && !key.only.empty()) {
    ConfigKey plain = key;
    plain.use = KeyUse::Acts;
    bool ok = false;
    for (const std::string &allowed : key.only)
      ok = ok || parse_typed(plain, allowed, "the schema") == v;
    if (!ok)
      fail(ZRT_ERR_CONFIG, "{} is {} (from {}): zerort supports only {}: {}", key.name, text,
           origin, joined_only(key), key.doc);
  }
  if (key.use == KeyUse::Disabled) check_disabled(key, std::get<nlohmann::json>(v), origin);
  return v;
}

namespace {

ConfigValue parse_typed(const ConfigKey &key, std::string_view text, std::string_view origin) {
  switch (key.type) {
    case ConfigType::Bool: {
      std::string t = lower(trim(text));
      if (t == "1" || t == "true" || t == "yes" || t == "on") return true;
      if (t == "0" || t == "false" || t == "no" || t == "off") return false;
      bad_value(key, text, origin);
    }
    case ConfigType::Int:
      return parse_integer(key, text, origin, false);
    case ConfigType::Size:
      return parse_integer(key, text, origin, true);
    case ConfigType::Double: {
      std::string t = trim(text);
      errno = 0;
      char *end = nullptr;
      double v = std::strtod(t.c_str(), &end);
      if (t.empty() || errno == ERANGE || *end != '\0' || !std::isfinite(v))
        bad_value(key, text, origin);
      return v;
    }
    case ConfigType::Enum: {
      std::string t = lower(trim(text));
      for (const std::string &c : key.choices)
        if (c == t) return c;
      bad_value(key, text, origin);
    }
    case ConfigType::String:
      return std::string(text);
    case ConfigType::Block: {
      nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
      if (j.is_discarded() || !j.is_object()) bad_value(key, text, origin);
      return j;
    }
    case ConfigType::DoubleList: {
      std::vector<double> values;
      std::string t = trim(text);
      if (!t.empty() && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
      size_t start = 0;
      for (;;) {
        size_t comma = t.find(',', start);
        std::string item =
            trim(t.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        errno = 0;
        char *end = nullptr;
        double v = std::strtod(item.c_str(), &end);
        if (item.empty() || errno == ERANGE || *end != '\0' || !std::isfinite(v))
          bad_value(key, text, origin);
        values.push_back(v);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      // min and max of a DoubleList bound its length.
      const auto n = static_cast<int64_t>(values.size());
      if ((key.min != INT64_MIN && n < key.min) || (key.max != INT64_MAX && n > key.max))
        bad_value(key, text, origin);
      return values;
    }
  }
  fail(ZRT_ERR_INTERNAL, "config key {} has no type", key.name);
}

}  // namespace

std::vector<std::pair<const ConfigKey *, std::string>> config_entries(const ConfigSchema &schema,
                                                                      const nlohmann::json &j,
                                                                      std::string_view where) {
  std::vector<std::pair<std::string, const nlohmann::json *>> flat;
  flatten(schema, j, "", flat);
  std::vector<std::pair<const ConfigKey *, std::string>> out;
  for (auto &[name, value] : flat) {
    const ConfigKey *key = schema.find(name);
    if (key == nullptr) {
      std::vector<std::string> hints = schema.suggest(name);
      fail(ZRT_ERR_CONFIG, "unknown key '{}' in {}{}; zrt-info --config-keys lists them all", name,
           where, hints.empty() ? "" : fmt::format(" (did you mean {}?)", fmt::join(hints, ", ")));
    }
    if (key->use == KeyUse::Refused)
      fail(ZRT_ERR_CONFIG, "{} (from {}) is not supported: {}", key->name, where, key->doc);
    bool list_ok = key->type == ConfigType::DoubleList && value->is_array();
    bool block_ok = key->type == ConfigType::Block && value->is_object();
    if ((value->is_array() && !list_ok) || value->is_null() ||
        (key->type == ConfigType::Block && !block_ok))
      fail(ZRT_ERR_CONFIG, "bad value {} for {} (from {}): {}", value->dump(), key->name, where,
           accepted(*key));
    out.emplace_back(key, list_ok || block_ok ? value->dump() : json_scalar_text(*value));
  }
  return out;
}

void Config::apply(const ConfigKey &key, std::string_view text, ConfigSource source,
                   std::string_view origin) {
  Entry e;
  e.key = &key;
  // A default is what zerort does, not a choice to check (a refused key has none).
  e.value = source == ConfigSource::Default ? parse_typed(key, text, origin)
                                            : parse_config_value(key, text, origin);
  e.source = source;
  e.origin = std::string(origin);
  e.is_auto = is_auto_text(key, text);
  entries_[key.name] = std::move(e);
}

namespace {

// ZRT_* variables that zerort's programs, scripts and tests read for themselves: not
// configuration keys, so the library leaves them alone rather than refusing them as
// misspelt ones (an installed zrt-gpt2's ZRT_DATA_DIR, slurm/local-cluster's settings,
// scripts/gpu-check's ZRT_TEST_REQUIRE_DEVICE, the fuzz corpus's folder).
constexpr std::string_view kProgramVariables[] = {
    "ZRT_DATA_DIR",   "ZRT_SLURM_DIR",           "ZRT_SLURM_PORT",
    "ZRT_SLURM_CPUS", "ZRT_TEST_REQUIRE_DEVICE", "ZRT_FUZZ_TOKENIZER_DIR"};

bool program_variable(std::string_view name) {
  return std::find(std::begin(kProgramVariables), std::end(kProgramVariables), name) !=
         std::end(kProgramVariables);
}

}  // namespace

Config Config::resolve(const ConfigSchema &schema, const std::string &file_path,
                       const std::map<std::string, std::string> &params, char **env) {
  Config c;
  c.schema_ = &schema;
  for (const ConfigKey &k : schema.keys())
    c.apply(k, k.default_value, ConfigSource::Default, "the built-in default");

  // The environment is read first (but applied last) because it may name the file.
  std::map<std::string, std::string> env_values;
  for (char **e = env; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (entry.substr(0, 4) != "ZRT_") continue;
    size_t eq = entry.find('=');
    std::string name(entry.substr(0, eq));
    std::string value(eq == std::string_view::npos ? "" : entry.substr(eq + 1));
    if (program_variable(name)) continue;
    const ConfigKey *key = schema.find_env(name);
    if (key == nullptr) {
      std::vector<std::string> hints = schema.suggest(name);
      fail(ZRT_ERR_CONFIG,
           "unknown environment variable {}{}; zrt-info --config-keys lists them all", name,
           hints.empty() ? "" : fmt::format(" (did you mean {}?)", fmt::join(hints, ", ")));
    }
    env_values[key->name] = value;
  }

  // The file: the program's choice, else the environment's.
  c.file_path_ = file_path;
  if (auto it = params.find("config_file"); c.file_path_.empty() && it != params.end())
    c.file_path_ = it->second;
  if (auto it = env_values.find("config_file"); it != env_values.end()) c.file_path_ = it->second;

  if (!c.file_path_.empty()) {
    // Opened without blocking (a FIFO would wait for a writer) and refused, naming what it
    // is, when it is not a regular file.
    const std::string text = read_regular_file(c.file_path_, "configuration file", ZRT_ERR_CONFIG);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception &e) {
      // parse_error, and out_of_range for a number beyond a double ("5e812", found by the
      // fuzz target).
      fail(ZRT_ERR_CONFIG, "configuration file {} is not valid JSON: {}", c.file_path_, e.what());
    }
    if (!j.is_object())
      fail(ZRT_ERR_CONFIG, "configuration file {} must hold a JSON object", c.file_path_);
    for (auto &[key, text] : config_entries(schema, j, c.file_path_))
      c.apply(*key, text, ConfigSource::File, c.file_path_);
  }

  Config out = c.with_params(params);
  out.env_texts_ = env_values;
  for (auto &[name, text] : env_values) {
    const ConfigKey *key = schema.find(name);
    out.apply(*key, text, ConfigSource::Environment, key->env_name());
  }
  return out;
}

Config Config::with_params(const std::map<std::string, std::string> &params) const {
  Config c = *this;
  for (auto &[name, text] : params) {
    const ConfigKey *key = schema_->find(name);
    if (key == nullptr) fail(ZRT_ERR_INTERNAL, "params set unknown config key {}", name);
    c.apply(*key, text, ConfigSource::Params, "the program's params");
  }
  for (auto &[name, text] : env_texts_) {
    const ConfigKey *key = schema_->find(name);
    c.apply(*key, text, ConfigSource::Environment, key->env_name());
  }
  return c;
}

const Config::Entry &Config::entry(std::string_view name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) fail(ZRT_ERR_INTERNAL, "no config key {}", name);
  return it->second;
}

const Config::Entry &Config::value_entry(std::string_view name) const {
  const Entry &e = entry(name);
  // parse_config_value refused "auto" without an auto_value where it was given, but a key
  // may be read by its own rules (is_auto first): say what is missing.
  if (e.is_auto && e.key->auto_value.empty())
    fail(ZRT_ERR_CONFIG,
         "{} is \"auto\" (from {}) and the program did not supply its value: \"auto\" is {}",
         e.key->name, e.origin, e.key->auto_doc);
  return e;
}

bool Config::get_bool(std::string_view name) const {
  return std::get<bool>(value_entry(name).value);
}
int64_t Config::get_int(std::string_view name) const {
  return std::get<int64_t>(value_entry(name).value);
}
double Config::get_double(std::string_view name) const {
  return std::get<double>(value_entry(name).value);
}
const std::string &Config::get_string(std::string_view name) const {
  return std::get<std::string>(value_entry(name).value);
}
const std::vector<double> &Config::get_doubles(std::string_view name) const {
  return std::get<std::vector<double>>(value_entry(name).value);
}
const nlohmann::json &Config::get_block(std::string_view name) const {
  return std::get<nlohmann::json>(value_entry(name).value);
}
ConfigSource Config::source(std::string_view name) const {
  return entry(name).source;
}
std::string Config::origin(std::string_view name) const {
  return entry(name).origin;
}
bool Config::is_auto(std::string_view name) const {
  return entry(name).is_auto;
}

namespace {

nlohmann::json value_json(const ConfigValue &value) {
  nlohmann::json v;
  std::visit([&](auto &&x) { v = x; }, value);
  return v;
}

}  // namespace

std::vector<Setting> Config::agreed_settings() const {
  std::vector<Setting> out;
  for (auto &[name, e] : entries_) {
    if (e.key == nullptr || e.key->per_rank) continue;
    nlohmann::json v = e.is_auto ? nlohmann::json("auto") : value_json(e.value);
    std::string source = source_name(e.source);
    if (e.source == ConfigSource::File) source += " " + file_path_;
    out.push_back({name, v.is_string() ? v.get<std::string>() : v.dump(), source});
  }
  return out;
}

nlohmann::json Config::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (auto &[name, e] : entries_)
    out[name] = {{"value", e.is_auto ? nlohmann::json("auto") : value_json(e.value)},
                 {"source", source_name(e.source)}};
  return out;
}

}  // namespace zrt
