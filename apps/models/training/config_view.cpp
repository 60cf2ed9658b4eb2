#include "config_view.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>

namespace training {

namespace {

// zerort's snprintf-like JSON calls: the length first, then the text.
template <class Call>
nlohmann::json read_json(Call call) {
  size_t length = 0;
  if (call(nullptr, 0, &length) != ZRT_SUCCESS) throw std::runtime_error(zrt_last_error_message());
  std::string text(length + 1, '\0');
  if (call(text.data(), text.size(), &length) != ZRT_SUCCESS)
    throw std::runtime_error(zrt_last_error_message());
  text.resize(length);
  return nlohmann::json::parse(text);
}

}  // namespace

ConfigView::ConfigView(zrt_context_h context) {
  const nlohmann::json d = read_json([&](char *buf, size_t size, size_t *length) {
    return zrt_context_describe(context, buf, size, length);
  });
  config_ = d.at("config");
  file_ = d.value("config_file", std::string());
  const nlohmann::json keys = read_json(zrt_config_schema);
  schema_ = nlohmann::json::object();
  for (const nlohmann::json &k : keys)
    schema_[k.at("name").get<std::string>()] = k;
}

const nlohmann::json &ConfigView::value(const std::string &key) const {
  if (!config_.contains(key)) throw std::logic_error("no configuration key " + key);
  return config_.at(key).at("value");
}

std::string ConfigView::source(const std::string &key) const {
  if (!config_.contains(key)) throw std::logic_error("no configuration key " + key);
  return config_.at(key).at("source").get<std::string>();
}

bool ConfigView::is_auto(const std::string &key) const {
  const nlohmann::json &v = value(key);
  if (source(key) == "default" || !v.is_string() || v.get<std::string>() != "auto") return false;
  // A key whose own values include auto (comm.backend, engine.memory_space) has no "auto"
  // of the Hugging Face kind.
  if (schema_.contains(key) && schema_[key].contains("choices"))
    for (const nlohmann::json &c : schema_[key]["choices"])
      if (c == "auto") return false;
  return true;
}

bool ConfigView::set_outside(const std::string &key) const {
  const std::string s = source(key);
  return (s == "file" || s == "environment") && !is_auto(key);
}

std::string ConfigView::origin(const std::string &key) const {
  if (source(key) == "environment")
    return schema_.contains(key) ? schema_[key].value("env", key) : key;
  return fmt::format("from {}", std::filesystem::path(file_).filename().string());
}

bool ConfigView::is_default(const std::string &key, const std::string &text) const {
  if (!schema_.contains(key)) return false;
  const std::string def = schema_[key].value("default", "");
  if (def == text) return true;
  // Numbers as numbers (0 and 0.0, 2e8 and 200000000); lists by their numbers.
  const nlohmann::json a = nlohmann::json::parse(def, nullptr, false);
  const nlohmann::json b = nlohmann::json::parse(text, nullptr, false);
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  if (b.is_array()) {
    const nlohmann::json list = nlohmann::json::parse("[" + def + "]", nullptr, false);
    return !list.is_discarded() && list == b;
  }
  return false;
}

bool ConfigView::engine_key(const std::string &key) const {
  return schema_.contains(key) && schema_[key].value("engine", false);
}

}  // namespace training
