// Every configuration key of zerort, in one table: the reference that
// `zrt-info --config-keys` prints and README.md documents. A key's environment variable
// is ZRT_ followed by its name in capitals with dots as underscores, unless set here.
#include "runtime/config.hpp"

namespace zrt {

namespace {

// A byte count: accepts 256K, 1M, 1G.
ConfigKey config_size(std::string name, int64_t default_value, int64_t min, int64_t max,
                      std::string doc) {
  ConfigKey k = config_int(std::move(name), default_value, min, max, std::move(doc));
  k.type = ConfigType::Size;
  return k;
}

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
      config_choice("comm.backend", "auto", {"auto", "mpi", "shm", "ucx", "hier", "nccl"},
                    "backend of new communicators; auto chooses per collective: nccl for device "
                    "memory, shm on one node, hier across nodes, mpi for small buffers across "
                    "nodes (a backend this build lacks is an error at zrt_init)"),
      config_size("comm.small_bytes", 65536, 0, INT64_MAX,
                  "auto: across nodes, collectives on fewer bytes than this go to mpi, whose "
                  "latency-bound algorithms win there"),
      config_key("comm.timeout", ConfigType::Double, "600",
                 "seconds a collective may run before the watchdog fails it on every rank, "
                 "naming the ranks that did not arrive; 0 turns the watchdog off"),
      config_key("comm.progress_thread", ConfigType::Bool, "false",
                 "a thread per rank, bound with hwloc to the rank's last core, steps "
                 "collectives while the program computes (needs MPI_THREAD_MULTIPLE)"),
      config_size("comm.shm.slot_bytes", 256 << 10, 4096, int64_t{1} << 30,
                  "shm: bytes each rank moves per pipeline step"),
      config_int("comm.shm.slots", 4, 2, 64,
                 "shm: pipeline steps in flight (slots per rank in shared memory)"),
      config_size("comm.ucx.chunk_bytes", 1 << 20, 4096, int64_t{1} << 30,
                  "ucx: bytes per message of the pipelined ring"),
      config_int("comm.ucx.window", 8, 1, 1024, "ucx: messages in flight per peer"),
      config_choice("comm.hier.inter", "auto", {"auto", "ucx", "mpi"},
                    "hier: backend between nodes (auto: ucx when built, else mpi)"),
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
