#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "not_regular_files.hpp"
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
    // A refused key has no value to parse; every other default is one the key takes.
    if (k.use != KeyUse::Refused) {
      EXPECT_NO_THROW(parse_config_value(k, k.default_value, "default")) << k.name;
    }
    EXPECT_FALSE(k.doc.empty()) << k.name << " has no documentation";
  }
  EXPECT_NE(s.find("log_level"), nullptr);
  EXPECT_EQ(s.find("config_file")->env_name(), "ZRT_CONFIG");
}

// --- DeepSpeed's keys: "auto", and none accepted and ignored ------------------------------

namespace {

// Resolves the library's schema over a file holding `json`.
Config resolve_text(const std::string &name, const std::string &json, char **env = nullptr) {
  Env none({});
  return Config::resolve(ConfigSchema::library(), write_file(name, json), {},
                         env != nullptr ? env : none.get());
}

// The JSON file that sets dotted `key` to `value` (JSON text), nested as DeepSpeed writes it.
std::string nested(const std::string &key, const std::string &value) {
  std::string open, close;
  size_t start = 0;
  for (size_t dot; (dot = key.find('.', start)) != std::string::npos; start = dot + 1) {
    open += "{\"" + key.substr(start, dot - start) + "\": ";
    close += "}";
  }
  return open + "{\"" + key.substr(start) + "\": " + value + "}" + close;
}

}  // namespace

TEST(ConfigDeepSpeed, AutoWhereNoValueFollowsFromTheJobNamesTheKeyAndTheFile) {
  const std::string file =
      write_file("auto_stage.json", R"({"zero_optimization": {"stage": "auto"}})");
  zrt_status_t st = ZRT_SUCCESS;
  Env env({});
  std::string m =
      error_of([&] { Config::resolve(ConfigSchema::library(), file, {}, env.get()); }, &st);
  EXPECT_EQ(st, ZRT_ERR_CONFIG);
  EXPECT_NE(m.find("zero_optimization.stage is \"auto\""), std::string::npos) << m;
  EXPECT_NE(m.find(file), std::string::npos) << m;
  EXPECT_NE(m.find("integers in [0, 3]"), std::string::npos) << m;
  // The environment too.
  Env var({"ZRT_OPTIMIZER=auto"});
  m = error_of([&] { Config::resolve(ConfigSchema::library(), "", {}, var.get()); }, &st);
  EXPECT_NE(m.find("optimizer.type is \"auto\" (from ZRT_OPTIMIZER)"), std::string::npos) << m;
}

TEST(ConfigDeepSpeed, AutoIsTheProgramsValueOrSaysWhatIsMissing) {
  Config c = resolve_text("auto_lr.json",
                          R"({"optimizer": {"params": {"lr": "auto"}}, "train_batch_size": "auto",
                              "scheduler": {"params": {"warmup_min_lr": "auto"}}})");
  EXPECT_TRUE(c.is_auto("optimizer.params.lr"));
  zrt_status_t st = ZRT_SUCCESS;
  std::string m = error_of([&] { c.get_double("optimizer.params.lr"); }, &st);
  EXPECT_EQ(st, ZRT_ERR_CONFIG);
  EXPECT_NE(m.find("optimizer.params.lr is \"auto\""), std::string::npos) << m;
  EXPECT_NE(m.find("auto_lr.json"), std::string::npos) << m;
  EXPECT_NE(m.find("did not supply"), std::string::npos) << m;
  // What the program sets fills it.
  Config filled = c.with_params({{"optimizer.params.lr", "0.02"}});
  EXPECT_FALSE(filled.is_auto("optimizer.params.lr"));
  EXPECT_DOUBLE_EQ(filled.get_double("optimizer.params.lr"), 0.02);
  // Keys with a value of zerort's own for "auto".
  EXPECT_EQ(c.get_int("train_batch_size"), 0);
  EXPECT_DOUBLE_EQ(c.get_double("scheduler.params.warmup_min_lr"), 0);
  EXPECT_EQ(c.to_json()["optimizer.params.lr"]["value"], "auto");
}

TEST(ConfigDeepSpeed, EveryDeepSpeedKeyActsOrIsRefusedOrTakesOnlyWhatZerortDoes) {
  int refused = 0, only = 0, disabled = 0, acts = 0;
  Env env({});
  for (const ConfigKey &k : ConfigSchema::library().keys()) {
    if (!k.deepspeed) continue;
    EXPECT_FALSE(k.doc.empty()) << k.name;
    const std::string file_name = "ds_" + k.name + ".json";
    auto resolve = [&](const std::string &value) {
      Config::resolve(ConfigSchema::library(), write_file(file_name, nested(k.name, value)), {},
                      env.get());
    };
    zrt_status_t st = ZRT_SUCCESS;
    switch (k.use) {
      case KeyUse::Refused: {
        ++refused;
        std::string m = error_of([&] { resolve("1"); }, &st);
        EXPECT_EQ(st, ZRT_ERR_CONFIG) << k.name;
        EXPECT_NE(m.find(k.name + " (from "), std::string::npos) << m;
        EXPECT_NE(m.find("is not supported: " + k.doc), std::string::npos) << m;
        break;
      }
      case KeyUse::Only: {
        ++only;
        if (k.only.empty()) break;  // checked by the engine (tests/optim/test_engine_settings.cpp)
        for (const std::string &v : k.only) {
          const std::string text = k.type == ConfigType::Enum ? "\"" + v + "\"" : v;
          EXPECT_EQ(error_of([&] { resolve(text); }), "") << k.name << " = " << v;
        }
        // A value outside: the other boolean, or a number that is none of them.
        std::string other =
            k.type == ConfigType::Bool ? (k.only[0] == "true" ? "false" : "true") : "7";
        if (k.type == ConfigType::Bool && k.only.size() == 2) break;  // both accepted
        std::string m = error_of([&] { resolve(other); }, &st);
        EXPECT_EQ(st, ZRT_ERR_CONFIG) << k.name;
        EXPECT_NE(m.find(k.name + " is " + other), std::string::npos) << m;
        EXPECT_NE(m.find("zerort supports only " + k.only[0]), std::string::npos) << m;
        EXPECT_NE(m.find(k.doc), std::string::npos) << m;
        break;
      }
      case KeyUse::Disabled: {
        ++disabled;
        EXPECT_EQ(error_of([&] { resolve(R"({"enabled": false, "output_path": "x"})"); }), "")
            << k.name;
        std::string m = error_of([&] { resolve(R"({"enabled": true})"); }, &st);
        EXPECT_EQ(st, ZRT_ERR_CONFIG) << k.name;
        EXPECT_NE(m.find(k.name + " (from "), std::string::npos) << m;
        EXPECT_NE(m.find("turns on " + k.name + ".enabled"), std::string::npos) << m;
        break;
      }
      case KeyUse::Acts:
        ++acts;
        break;
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(only, 0);
  EXPECT_GT(disabled, 0);
  EXPECT_GT(acts, 0);
  // A block without "enabled" is off when every flag is.
  Config off = resolve_text("ac_off.json", R"({"activation_checkpointing":
                                 {"partition_activations": false, "number_checkpoints": 4}})");
  (void)off;
  zrt_status_t st = ZRT_SUCCESS;
  std::string m = error_of(
      [&] {
        resolve_text("ac_on.json", R"({"activation_checkpointing": {"cpu_checkpointing": true}})");
      },
      &st);
  EXPECT_NE(m.find("turns on activation_checkpointing.cpu_checkpointing"), std::string::npos) << m;
  EXPECT_NE(m.find("--recompute"), std::string::npos) << m;
}

// The keys zerort used to accept in a file and ignore: each is now a key (or a block of
// keys) that acts, is refused, or takes only what zerort does.
TEST(ConfigDeepSpeed, NoKeyOnceIgnoredIsLeftWithoutAUse) {
  const char *once_ignored[] = {"train_batch_size",
                                "train_micro_batch_size_per_gpu",
                                "steps_per_print",
                                "wall_clock_breakdown",
                                "dump_state",
                                "prescale_gradients",
                                "gradient_predivide_factor",
                                "sparse_gradients",
                                "scheduler",
                                "activation_checkpointing",
                                "flops_profiler",
                                "tensorboard",
                                "wandb",
                                "csv_monitor",
                                "comms_logger",
                                "communication_data_type",
                                "data_types",
                                "amp",
                                "zero_allow_untested_optimizer",
                                "zero_force_ds_cpu_optimizer",
                                "fp16.auto_cast",
                                "fp16.consecutive_hysteresis",
                                "bf16.immediate_grad_update",
                                "zero_optimization.contiguous_gradients",
                                "zero_optimization.reduce_scatter",
                                "zero_optimization.allgather_partitions",
                                "zero_optimization.round_robin_gradients",
                                "zero_optimization.offload_param",
                                "zero_optimization.offload_optimizer.pin_memory",
                                "zero_optimization.offload_optimizer.nvme_path",
                                "zero_optimization.offload_optimizer.buffer_count",
                                "zero_optimization.offload_optimizer.fast_init",
                                "zero_optimization.sub_group_size",
                                "zero_optimization.stage3_max_reuse_distance",
                                "zero_optimization.stage3_prefetch_bucket_size",
                                "zero_optimization.stage3_param_persistence_threshold",
                                "zero_optimization.stage3_gather_16bit_weights_on_model_save",
                                "zero_optimization.elastic_checkpoint",
                                "zero_optimization.load_from_fp32_weights",
                                "zero_optimization.ignore_unused_parameters",
                                "zero_optimization.cpu_offload",
                                "optimizer.params.bias_correction",
                                "optimizer.params.amsgrad",
                                "optimizer.params.torch_adam",
                                "optimizer.params.adam_w_mode"};
  const ConfigSchema &s = ConfigSchema::library();
  for (const std::string name : once_ignored) {
    int keys = 0;
    for (const ConfigKey &k : s.keys())
      if (k.name == name || k.name.rfind(name + ".", 0) == 0) {
        ++keys;
        EXPECT_TRUE(k.deepspeed) << k.name;
        EXPECT_TRUE(k.engine) << k.name;
      }
    EXPECT_GT(keys, 0) << name << " is no key";
  }
}

TEST(Config, AConfigurationFileThatIsNotARegularFileIsRefusedWithoutWaiting) {
  test::NotRegularFiles paths("config");
  const ConfigSchema &schema = ConfigSchema::library();
  for (const test::NotRegular &p : paths.all()) {
    SCOPED_TRACE(p.path);
    const std::string variable = "ZRT_CONFIG=" + p.path;
    std::vector<char> entry(variable.begin(), variable.end());
    entry.push_back('\0');
    char *env[] = {entry.data(), nullptr};
    zrt_status_t status = ZRT_SUCCESS;
    std::string message;
    ASSERT_TRUE(test::returns_within(
        [&] { message = error_of([&] { Config::resolve(schema, "", {}, env); }, &status); },
        paths.fifo()))
        << "ZRT_CONFIG=" << p.path << " blocked";
    EXPECT_EQ(status, ZRT_ERR_CONFIG);
    EXPECT_NE(message.find("cannot open configuration file " + p.path + ": it is " + p.kind),
              std::string::npos)
        << message;
  }
}
