// Every configuration key of zerort, in one table: the reference that
// `zrt-info --config-keys` prints and README.md documents. A key's environment variable
// is ZRT_ followed by its name in capitals with dots as underscores, unless set here.
#include "runtime/config.hpp"

#include <algorithm>
#include <stdexcept>

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

// A byte count: accepts 256K, 1M, 1G.
ConfigKey config_size(std::string name, int64_t default_value, int64_t min, int64_t max,
                      std::string doc) {
  ConfigKey k = config_int(std::move(name), default_value, min, max, std::move(doc));
  k.type = ConfigType::Size;
  return k;
}

ConfigKey with_env(ConfigKey k, std::string env) {
  k.env = std::move(env);
  return k;
}

ConfigKey config_real(std::string name, std::string default_value, std::string env,
                      std::string doc) {
  return with_env(
      config_key(std::move(name), ConfigType::Double, std::move(default_value), std::move(doc)),
      std::move(env));
}

// DeepSpeed keys that a ds_config.json commonly holds and zerort does not use: accepted
// with a warning so that such a file works as it is. Anything else unknown is an error.
std::vector<ConfigKey> deepspeed_ignored_keys() {
  std::vector<ConfigKey> keys;
  for (const char *name : {"train_batch_size",
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
                           "optimizer.params.adam_w_mode"}) {
    keys.push_back(config_key(name, ConfigType::Ignored, "",
                              "DeepSpeed key accepted and ignored (with a warning)"));
  }
  return keys;
}

// The ZeRO engine's knobs, named as in DeepSpeed's ds_config.json where DeepSpeed has
// the knob, so that such a file mostly works as it is. A zrt_engine_params_t field the
// program sets takes precedence over the file; the environment over both.
std::vector<ConfigKey> engine_keys() {
  ConfigKey stage =
      with_env(config_int("zero_optimization.stage", 2, 0, 3,
                          "ZeRO stage: 0 data parallel, 1 sharded optimizer state, 2 and sharded "
                          "gradients, 3 and sharded parameters"),
               "ZRT_ZERO_STAGE");
  ConfigKey reduce = with_env(
      config_int("zero_optimization.reduce_bucket_size", 25 << 20 >> 2, 1, int64_t{1} << 40,
                 "gradient bucket size in elements (DeepSpeed's unit); 6553600 = 25 MiB of "
                 "fp32"),
      "ZRT_REDUCE_BUCKET_SIZE");
  ConfigKey gather =
      with_env(config_int("zero_optimization.allgather_bucket_size", 25 << 20 >> 2, 1,
                          int64_t{1} << 40, "parameter all-gather bucket size in elements"),
               "ZRT_ALLGATHER_BUCKET_SIZE");
  ConfigKey betas =
      with_env(config_key("optimizer.params.betas", ConfigType::DoubleList, "0.9,0.999",
                          "Adam/LAMB moment coefficients [beta1, beta2]"),
               "ZRT_OPTIMIZER_BETAS");
  betas.min = betas.max = 2;
  return {
      stage,
      reduce,
      gather,
      with_env(config_key("zero_optimization.overlap_comm", ConfigType::Bool, "true",
                          "post each bucket's reduction as soon as it is full, overlapping "
                          "backward; off: reduce synchronously"),
               "ZRT_OVERLAP_COMM"),
      with_env(config_choice("zero_optimization.offload_optimizer.device", "none", {"none", "cpu"},
                             "cpu: optimizer state in pinned host memory, updated on the CPU "
                             "(ZeRO-Offload)"),
               "ZRT_OFFLOAD_OPTIMIZER"),
      with_env(config_int("zero_optimization.stage3_max_live_parameters", 1000000000, 0,
                          int64_t{1} << 48,
                          "stage 3: gathered parameters (elements) kept resident after release "
                          "before the least recently used are freed"),
               "ZRT_STAGE3_MAX_LIVE_PARAMETERS"),
      config_choice("engine.memory_space", "host", {"host", "device", "auto"},
                    "where the engine's buffers live: host; device (the rank's GPU, or the "
                    "emulated device); auto: device when every rank has one. The default "
                    "keeps programs written for host memory unchanged"),
      config_choice("engine.shared_buffers", "auto", {"auto", "off"},
                    "auto: a host engine whose backend reads node-shared memory in place (shm, "
                    "hier inside a node) keeps the buffers its collectives use (parameters at "
                    "stages 1-3, gradients, buckets, landing slices, stage 3's gathered groups) "
                    "in one window every rank of the node maps, as zrt_comm_mem_alloc does; "
                    "off: private host memory"),
      with_env(config_key("zero.deterministic", ConfigType::Bool, "false",
                          "reductions add in rank order: every stage gives bitwise-identical "
                          "parameters for the same world size, run after run"),
               "ZRT_DETERMINISTIC"),
      config_key("check_grad_overflow", ConfigType::Bool, "true",
                 "every step checks the global gradient norm (agreed across ranks) and skips "
                 "the update on every rank when it is Inf or NaN, leaving parameters and "
                 "optimizer state untouched, in every dtype (fp16 with dynamic loss scaling "
                 "also lowers the scale); the step report counts the skips"),
      with_env(config_key("fp16.enabled", ConfigType::Bool, "false",
                          "parameters and gradients in fp16 with fp32 master weights"),
               "ZRT_FP16"),
      with_env(config_key("bf16.enabled", ConfigType::Bool, "false",
                          "parameters and gradients in bf16 with fp32 master weights"),
               "ZRT_BF16"),
      config_real("fp16.loss_scale", "0", "ZRT_LOSS_SCALE",
                  "0: dynamic loss scaling (fp16); another value: that static scale"),
      with_env(config_int("fp16.initial_scale_power", 16, 0, 64,
                          "dynamic loss scaling starts at 2^this"),
               "ZRT_INITIAL_SCALE_POWER"),
      with_env(config_int("fp16.loss_scale_window", 1000, 1, int64_t{1} << 40,
                          "steps without overflow before the loss scale doubles"),
               "ZRT_LOSS_SCALE_WINDOW"),
      with_env(config_int("fp16.hysteresis", 2, 1, 1 << 20,
                          "overflows tolerated before the loss scale halves"),
               "ZRT_HYSTERESIS"),
      config_real("fp16.min_loss_scale", "1", "ZRT_MIN_LOSS_SCALE",
                  "the dynamic loss scale never drops below this"),
      config_real("gradient_clipping", "0", "ZRT_GRADIENT_CLIPPING",
                  "clip the global gradient norm to this value; 0 disables clipping"),
      with_env(config_int("gradient_accumulation_steps", 1, 1, 1 << 20,
                          "micro-steps (zrt_engine_step calls) per optimizer step"),
               "ZRT_GRADIENT_ACCUMULATION_STEPS"),
      with_env(config_choice("optimizer.type", "adamw", {"adamw", "adam", "sgd", "lamb"},
                             "optimizer run on each rank's shard"),
               "ZRT_OPTIMIZER"),
      config_real("optimizer.params.lr", "0.001", "ZRT_LR", "learning rate"),
      betas,
      config_real("optimizer.params.eps", "1e-8", "ZRT_OPTIMIZER_EPS",
                  "Adam/LAMB denominator epsilon"),
      config_real("optimizer.params.weight_decay", "0", "ZRT_WEIGHT_DECAY",
                  "weight decay (decoupled for AdamW and LAMB, L2 for Adam and SGD)"),
      config_real("optimizer.params.momentum", "0", "ZRT_MOMENTUM", "SGD momentum"),
      with_env(config_key("optimizer.params.nesterov", ConfigType::Bool, "false",
                          "SGD: Nesterov momentum"),
               "ZRT_NESTEROV"),
      config_choice("kernels.isa", "auto", {"auto", "avx512", "avx2", "scalar"},
                    "instruction set of the optimizer kernels; auto picks the best the CPU has"),
      config_int("kernels.threads", 0, 0, 4096,
                 "optimizer threads per rank, each bound to one of the rank's processing "
                 "units; 0: one per unit"),
  };
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
      config_choice("comm.backend", "auto", {"auto", "mpi", "shm", "ucx", "hier", "staged", "nccl"},
                    "backend of new communicators; auto chooses per collective: nccl for device "
                    "memory with one rank per GPU, staged (through pinned host memory) for other "
                    "device memory, shm on one node, hier across nodes, mpi for small buffers "
                    "across nodes (a backend this build lacks is an error at zrt_init)"),
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
      config_choice("comm.shm.single_copy", "auto", {"auto", "cma", "off"},
                    "shm: auto: all-gathers (and the all-gather half of all-reduce) of "
                    "comm.shm.single_copy_bytes and more read straight from the peers' memory "
                    "with process_vm_readv (one copy instead of two through shared memory) "
                    "where it works, with a warning where it does not; cma: every size, "
                    "reduce-scatters too, an error where it does not work; off: always through "
                    "shared memory"),
      config_size("comm.shm.single_copy_bytes", 1 << 20, 0, INT64_MAX,
                  "shm: smallest buffer (all ranks' shards together) that auto copies once"),
      config_choice("comm.shm.direct", "auto", {"auto", "off"},
                    "shm: auto: zrt_comm_mem_alloc maps each buffer into every rank of the "
                    "node, and collectives of comm.shm.direct_bytes and more whose buffers all "
                    "come from it read the peers' buffers in place (one pass instead of a copy "
                    "through the slots and a pass); off: zrt_comm_mem_alloc returns private "
                    "memory"),
      config_size("comm.shm.direct_bytes", 1 << 20, 0, INT64_MAX,
                  "shm: smallest buffer (all ranks' shards together) whose collective first "
                  "asks whether the buffers are shared"),
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
      config_size("checkpoint.block_bytes", "4M", 4, int64_t{1} << 30,
                  "checkpoints write, checksum and verify their datasets in blocks of this "
                  "many bytes (whole fp32 values; the file records it, so a file of any block size "
                  "loads)"),
      config_size("checkpoint.alignment", "1M", 0, int64_t{1} << 30,
                  "checkpoint datasets of 64 KiB or more start at a multiple of this in the file "
                  "(a file system's stripe or block size); 0 or 1: packed"),
      config_choice("checkpoint.direct_io", "auto", {"auto", "off"},
                    "auto: each rank writes the aligned part of its checkpoint blocks with "
                    "O_DIRECT where the file system takes it, bypassing the page cache (a "
                    "fraction of the CPU, which a background save takes from training); off: "
                    "through the page cache"),
      config_size("memory.host.limit", "0", 0, kMaxBytes,
                  "most host memory the context's host pool may reserve; 0: what the process may "
                  "use, the smallest of the node's physical memory, its memory cgroup's limit, "
                  "what RLIMIT_DATA leaves free and half of what RLIMIT_AS leaves free (less "
                  "256 MiB and 72 MiB per core for threads and libraries)"),
      config_size("memory.host.segment_bytes", "2M", 4096, kMaxBytes,
                  "the host pool grows and trims by whole segments of this size"),
      config_size("memory.pinned_host.limit", "0", 0, kMaxBytes,
                  "most pinned host memory the context's pinned pool may reserve; 0: half of "
                  "memory.host.limit's default"),
      config_size("memory.pinned_host.segment_bytes", "2M", 4096, kMaxBytes,
                  "growth step of the pinned host pool (at least 64M with cudaHostAlloc)"),
      config_size("memory.device.limit", "0", 0, kMaxBytes,
                  "most device memory the context's device pool may reserve; 0: the GPU's memory "
                  "(emulated: half of memory.host.limit's default)"),
      config_size("memory.device.segment_bytes", "64M", 4096, kMaxBytes,
                  "the device pool adds cudaMalloc segments of this size (or of the request, if "
                  "larger)"),
      config_key("memory.device.emulate", ConfigType::Bool, "false",
                 "an emulated device instead of the GPU: device memory is a separate host arena "
                 "that zerort reaches only through its streams, so every device path runs on a "
                 "machine without a GPU (for tests); never switched on by itself"),
      config_size("memory.alignment", "256", 64, int64_t{1} << 20,
                  "alignment of every pool allocation, a power of two; sizes round up to it"),
      config_size("memory.thread_cache_bytes", "32M", 0, kMaxBytes,
                  "idle bytes each thread keeps per pool for its own allocations, which then "
                  "take no lock; blocks up to half of it are cached; 0: no thread caches"),
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

// Keys that may differ between ranks: what one rank prints, where it runs and how it sizes
// its own pools and threads changes nothing the other ranks see. The file's path may differ
// too (each node its own copy); what it sets is compared key by key. Every other key must
// resolve alike on every rank (runtime/settings_agreement.hpp).
constexpr const char *kPerRankKeys[] = {
    "config_file",
    "log_level",
    "bind",
    "comm.progress_thread",
    "kernels.isa",
    "kernels.threads",
    "memory.host.limit",
    "memory.host.segment_bytes",
    "memory.pinned_host.limit",
    "memory.pinned_host.segment_bytes",
    "memory.device.limit",
    "memory.device.segment_bytes",
    "memory.thread_cache_bytes",
    "memory.compact",
    "offload.ring_bytes",
    "offload.prefetch_depth",
};

std::vector<ConfigKey> all_keys() {
  std::vector<ConfigKey> keys = library_keys();
  for (auto *more : {engine_keys, deepspeed_ignored_keys})
    for (ConfigKey &k : more())
      keys.push_back(std::move(k));
  for (const char *name : kPerRankKeys) {
    auto it =
        std::find_if(keys.begin(), keys.end(), [&](const ConfigKey &k) { return k.name == name; });
    if (it == keys.end()) throw std::logic_error(std::string("per-rank key is not a key: ") + name);
    it->per_rank = true;
  }
  return keys;
}

}  // namespace

const ConfigSchema &ConfigSchema::library() {
  static const ConfigSchema schema(all_keys());
  return schema;
}

}  // namespace zrt
