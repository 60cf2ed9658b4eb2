// Every configuration key of zerort, in one table: the reference that
// `zrt-info --config-keys` prints and README.md documents. A key's environment variable
// is ZRT_ followed by its name in capitals with dots as underscores, unless set here.
#include "runtime/config.hpp"

namespace zrt {

namespace {

ConfigKey config_size(std::string name, std::string default_value, int64_t min, int64_t max,
                      std::string doc) {
  ConfigKey k =
      config_key(std::move(name), ConfigType::Size, std::move(default_value), std::move(doc));
  k.min = min;
  k.max = max;
  return k;
}

std::vector<ConfigKey> library_keys() {
  constexpr int64_t kMaxBytes = int64_t{1} << 50;
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
      config_key("comm.check_args", ConfigType::Bool, "true",
                 "agree on each collective's kind, count, dtype, op and root across ranks before "
                 "running it, so a mismatch is an error on every rank instead of a hang"),
      config_size("memory.host.limit", "0", 0, kMaxBytes,
                  "most host memory the context's host pool may reserve; 0: the node's physical "
                  "memory"),
      config_size("memory.host.segment_bytes", "2M", 4096, kMaxBytes,
                  "the host pool grows and trims by whole segments of this size"),
      config_size("memory.pinned_host.limit", "0", 0, kMaxBytes,
                  "most pinned host memory the context's pinned pool may reserve; 0: half the "
                  "node's physical memory"),
      config_size("memory.pinned_host.segment_bytes", "2M", 4096, kMaxBytes,
                  "growth step of the pinned host pool (at least 64M with cudaHostAlloc)"),
      config_size("memory.device.limit", "0", 0, kMaxBytes,
                  "most device memory the context's device pool may reserve; 0: the GPU's memory"),
      config_size("memory.device.segment_bytes", "64M", 4096, kMaxBytes,
                  "the device pool adds cudaMalloc segments of this size (or of the request, if "
                  "larger)"),
      config_size("memory.alignment", "256", 64, int64_t{1} << 20,
                  "alignment of every pool allocation, a power of two; sizes round up to it"),
      config_choice("memory.compact", "auto", {"auto", "eager", "off"},
                    "when an allocation compacts its pool: auto when the pool cannot grow but its "
                    "free memory would suffice in one piece, eager also before growing, off only "
                    "in zrt_pool_defragment"),
      config_size("offload.ring_bytes", "256M", 4096, kMaxBytes,
                  "pinned host ring of the context's activation offload engine"),
      config_int(
          "offload.prefetch_depth", 2, 1, 64,
          "tokens an offload engine stages ahead of zrt_offload_fetch (2: double buffering)"),
  };
}

}  // namespace

const ConfigSchema &ConfigSchema::library() {
  static const ConfigSchema schema(library_keys());
  return schema;
}

}  // namespace zrt
