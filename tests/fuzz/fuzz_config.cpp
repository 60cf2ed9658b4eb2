// Fuzz target: zerort's configuration parser. Any bytes, read as a JSON configuration file
// or as the value of every key (what a ZRT_* variable would hold), must either resolve or
// fail with zrt::Error (ZRT_ERR_CONFIG): never crash, never another exception.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "runtime/config.hpp"
#include "runtime/error.hpp"

namespace {

const std::string &scratch_file() {
  static const std::string path = "/tmp/zrt_fuzz_config_" + std::to_string(::getpid()) + ".json";
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const zrt::ConfigSchema &schema = zrt::ConfigSchema::library();
  const std::string text(reinterpret_cast<const char *>(data), size);
  {
    std::ofstream out(scratch_file(), std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  char *no_environment[] = {nullptr};
  try {
    zrt::Config c = zrt::Config::resolve(schema, scratch_file(), {}, no_environment);
    (void)c.to_json();
    (void)c.agreed_settings();
  } catch (const zrt::Error &) {
  }
  // The same bytes as every key's value, the way the environment passes them.
  if (text.find('\0') == std::string::npos) {
    for (const zrt::ConfigKey &key : schema.keys()) {
      try {
        (void)zrt::parse_config_value(key, text, "ZRT_FUZZ");
      } catch (const zrt::Error &) {
      }
    }
  }
  return 0;
}
