#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "runtime/config.hpp"
#include "runtime/error.hpp"

using namespace zrt;

namespace {

// An environ-style array that owns its strings.
struct Env {
  std::vector<std::string> entries;
  std::vector<char *> pointers;
  explicit Env(std::vector<std::string> e) : entries(std::move(e)) {
    for (auto &s : entries)
      pointers.push_back(s.data());
    pointers.push_back(nullptr);
  }
  char **get() { return pointers.data(); }
};

std::string write_file(const std::string &name, const std::string &text) {
  std::string path = ::testing::TempDir() + std::to_string(getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

ConfigSchema test_schema() {
  ConfigKey bucket = config_key("comm.bucket", ConfigType::Size, "1M", "bucket bytes");
  bucket.min = 1;
  bucket.max = int64_t{1} << 40;
  bucket.aliases = {"reduce_bucket_size"};
  ConfigKey file = config_key("config_file", ConfigType::String, "", "file");
  file.env = "ZRT_CONFIG";
  return ConfigSchema({
      config_choice("log_level", "warn", {"error", "warn", "info", "debug"}, "level"),
      bucket,
      config_key("flag", ConfigType::Bool, "false", "a flag"),
      config_key("ratio", ConfigType::Double, "0.5", "a ratio"),
      config_int("ranks", 0, 0, 64, "ranks"),
      file,
  });
}

std::string error_of(const std::function<void()> &f, zrt_status_t *status = nullptr) {
  try {
    f();
  } catch (const Error &e) {
    if (status) *status = e.status();
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Config, DefaultsWhenNothingIsSet) {
  ConfigSchema s = test_schema();
  Env env({"PATH=/bin"});
  Config c = Config::resolve(s, "", {}, env.get());
  EXPECT_EQ(c.get_string("log_level"), "warn");
  EXPECT_EQ(c.get_int("comm.bucket"), 1 << 20);
  EXPECT_FALSE(c.get_bool("flag"));
  EXPECT_DOUBLE_EQ(c.get_double("ratio"), 0.5);
  EXPECT_EQ(c.source("log_level"), ConfigSource::Default);
}

TEST(Config, PrecedenceIsDefaultFileParamsEnvironment) {
  ConfigSchema s = test_schema();
  std::string file = write_file(
      "prec.json", R"({"log_level": "info", "flag": true, "comm": {"bucket": "4K"}, "ranks": 3})");
  Env env({"ZRT_LOG_LEVEL=error"});
  Config c = Config::resolve(s, file, {{"log_level", "debug"}, {"flag", "false"}}, env.get());
  EXPECT_EQ(c.get_string("log_level"), "error");
  EXPECT_EQ(c.source("log_level"), ConfigSource::Environment);
  EXPECT_FALSE(c.get_bool("flag"));
  EXPECT_EQ(c.source("flag"), ConfigSource::Params);
  EXPECT_EQ(c.get_int("comm.bucket"), 4096);
  EXPECT_EQ(c.source("comm.bucket"), ConfigSource::File);
  EXPECT_EQ(c.get_int("ranks"), 3);
  EXPECT_EQ(c.source("ratio"), ConfigSource::Default);
}

TEST(Config, WithParamsKeepsTheEnvironmentOnTop) {
  ConfigSchema s = test_schema();
  Env env({"ZRT_RANKS=7"});
  Config c = Config::resolve(s, "", {}, env.get());
  Config d = c.with_params({{"ranks", "2"}, {"flag", "on"}});
  EXPECT_EQ(d.get_int("ranks"), 7);
  EXPECT_TRUE(d.get_bool("flag"));
  EXPECT_EQ(d.source("flag"), ConfigSource::Params);
}

TEST(Config, EnvironmentNamesTheFile) {
  ConfigSchema s = test_schema();
  std::string file = write_file("envfile.json", R"({"ranks": 5})");
  Env env({"ZRT_CONFIG=" + file});
  Config c = Config::resolve(s, "", {}, env.get());
  EXPECT_EQ(c.get_int("ranks"), 5);
  EXPECT_EQ(c.file_path(), file);
}

TEST(Config, AliasesAreAcceptedInTheFile) {
  ConfigSchema s = test_schema();
  std::string file = write_file("alias.json", R"({"reduce_bucket_size": 500000000})");
  Env env({});
  Config c = Config::resolve(s, file, {}, env.get());
  EXPECT_EQ(c.get_int("comm.bucket"), 500000000);
}

TEST(Config, ProgramsOwnVariablesAreNotRefusedAsUnknownKeys) {
  ConfigSchema s = test_schema();
  Env programs({"ZRT_DATA_DIR=/data", "ZRT_SLURM_PORT=6917", "ZRT_TEST_REQUIRE_DEVICE=1"});
  EXPECT_EQ(error_of([&] { Config::resolve(s, "", {}, programs.get()); }), "");
  // A near miss of them is still an unknown key.
  Env typo({"ZRT_DATA_DIRS=/data"});
  EXPECT_NE(error_of([&] {
              Config::resolve(s, "", {}, typo.get());
            }).find("unknown environment variable ZRT_DATA_DIRS"),
            std::string::npos);
}

TEST(Config, BadValueNamesKeyOriginAndAcceptedValues) {
  ConfigSchema s = test_schema();
  Env env({"ZRT_LOG_LEVEL=loud"});
  zrt_status_t st = ZRT_SUCCESS;
  std::string msg = error_of([&] { Config::resolve(s, "", {}, env.get()); }, &st);
  EXPECT_EQ(st, ZRT_ERR_CONFIG);
  EXPECT_NE(msg.find("'loud'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("log_level"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ZRT_LOG_LEVEL"), std::string::npos) << msg;
  EXPECT_NE(msg.find("error, warn, info, debug"), std::string::npos) << msg;
}

TEST(Config, IntegerBoundsAndSuffixes) {
  ConfigSchema s = test_schema();
  Env big({"ZRT_RANKS=65"});
  EXPECT_NE(error_of([&] { Config::resolve(s, "", {}, big.get()); }).find("[0, 64]"),
            std::string::npos);
  Env junk({"ZRT_RANKS=3x"});
  EXPECT_NE(error_of([&] { Config::resolve(s, "", {}, junk.get()); }), "");
  Env size({"ZRT_COMM_BUCKET=2G"});
  EXPECT_EQ(Config::resolve(s, "", {}, size.get()).get_int("comm.bucket"), int64_t{2} << 30);
  Env zero({"ZRT_COMM_BUCKET=0"});
  EXPECT_NE(error_of([&] { Config::resolve(s, "", {}, zero.get()); }), "");
  Env real({"ZRT_RANKS=6e1"});
  EXPECT_EQ(Config::resolve(s, "", {}, real.get()).get_int("ranks"), 60);
  Env fraction({"ZRT_RANKS=6.5"});
  EXPECT_NE(error_of([&] { Config::resolve(s, "", {}, fraction.get()); }), "");
  Env ratio({"ZRT_RATIO=nan"});
  EXPECT_NE(error_of([&] { Config::resolve(s, "", {}, ratio.get()); }), "");
}

TEST(Config, UnknownEnvironmentVariableSuggestsTheNearestKey) {
  ConfigSchema s = test_schema();
  Env env({"ZRT_LOG_LEVLE=info"});
  zrt_status_t st = ZRT_SUCCESS;
  std::string msg = error_of([&] { Config::resolve(s, "", {}, env.get()); }, &st);
  EXPECT_EQ(st, ZRT_ERR_CONFIG);
  EXPECT_NE(msg.find("ZRT_LOG_LEVLE"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean ZRT_LOG_LEVEL"), std::string::npos) << msg;
}

TEST(Config, UnknownFileKeyIsAnError) {
  ConfigSchema s = test_schema();
  std::string file = write_file("unknown.json", R"({"comm": {"buckt": 5}})");
  Env env({});
  std::string msg = error_of([&] { Config::resolve(s, file, {}, env.get()); });
  EXPECT_NE(msg.find("unknown key 'comm.buckt'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("comm.bucket"), std::string::npos) << msg;
}

TEST(Config, MalformedAndMissingFilesAreErrors) {
  ConfigSchema s = test_schema();
  Env env({});
  std::string bad = write_file("bad.json", "{\"ranks\": ");
  EXPECT_NE(error_of([&] { Config::resolve(s, bad, {}, env.get()); }).find("not valid JSON"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              Config::resolve(s, "/nonexistent/zrt.json", {}, env.get());
            }).find("cannot open"),
            std::string::npos);
  std::string arr = write_file("array.json", "[1, 2]");
  EXPECT_NE(error_of([&] { Config::resolve(s, arr, {}, env.get()); }).find("JSON object"),
            std::string::npos);
  std::string list = write_file("listvalue.json", R"({"ranks": [1]})");
  EXPECT_NE(error_of([&] { Config::resolve(s, list, {}, env.get()); }).find("bad value"),
            std::string::npos);
}

TEST(Config, LibrarySchemaHasUniqueNamesAndValidDefaults) {
  const ConfigSchema &s = ConfigSchema::library();
  std::set<std::string> names, envs;
  for (const ConfigKey &k : s.keys()) {
    EXPECT_TRUE(names.insert(k.name).second) << "duplicate key " << k.name;
    EXPECT_TRUE(envs.insert(k.env_name()).second) << "duplicate variable " << k.env_name();
    EXPECT_NO_THROW(parse_config_value(k, k.default_value, "default")) << k.name;
    EXPECT_FALSE(k.doc.empty()) << k.name << " has no documentation";
  }
  EXPECT_NE(s.find("log_level"), nullptr);
  EXPECT_EQ(s.find("config_file")->env_name(), "ZRT_CONFIG");
}
