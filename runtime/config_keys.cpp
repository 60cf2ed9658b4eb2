// Every configuration key of zerort, in one table: the reference that
// `zrt-info --config-keys` prints and README.md documents. A key's environment variable
// is ZRT_ followed by its name in capitals with dots as underscores, unless set here.
#include "runtime/config.hpp"

namespace zrt {

namespace {

std::vector<ConfigKey> library_keys() {
  ConfigKey file =
      config_key("config_file", ConfigType::String, "", "JSON configuration file read at zrt_init");
  file.env = "ZRT_CONFIG";
  return {
      file,
      config_choice("log_level", "warn", {"error", "warn", "info", "debug", "trace"},
                    "messages at this level and more severe are written to stderr"),
      config_choice(
          "bind", "auto", {"auto", "none", "core"},
          "auto: bind each rank to its share of the node's cores unless the launcher already "
          "bound it; none: never bind; core: always bind"),
      config_int("ranks_per_node", 0, 0, 1 << 20,
                 "0: find nodes with MPI_COMM_TYPE_SHARED; n: treat each n consecutive ranks as "
                 "one node (to test multi-node code paths on one machine)"),
      config_choice("comm.backend", "auto", {"auto", "mpi"},
                    "communication backend of new communicators; auto lets the registry choose"),
      config_key("comm.deterministic", ConfigType::Bool, "false",
                 "reductions add the ranks' contributions in rank order and round once, so "
                 "results are bitwise identical across runs, backends and ZeRO stages"),
      config_key("comm.check_args", ConfigType::Bool, "true",
                 "agree on each collective's kind, count, dtype, op and root across ranks before "
                 "running it, so a mismatch is an error on every rank instead of a hang"),
  };
}

}  // namespace

const ConfigSchema &ConfigSchema::library() {
  static const ConfigSchema schema(library_keys());
  return schema;
}

}  // namespace zrt
