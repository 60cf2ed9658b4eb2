// Every configuration key of zerort, in one table: the reference that
// `zrt-info --config-keys` prints and docs/configuration.md shows (generated from it by
// scripts/gen-config-doc; the test docs_configuration fails until it is regenerated). A
// key's environment variable is ZRT_ followed by its name in capitals with dots as
// underscores, unless set here.
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

ConfigKey with_auto(ConfigKey k, std::string doc, std::string value = "") {
  k.auto_doc = std::move(doc);
  k.auto_value = std::move(value);
  return k;
}

// Accepted only with the values in `values` (text), which describe what zerort does anyway.
ConfigKey only(ConfigKey k, std::vector<std::string> values) {
  k.use = KeyUse::Only;
  k.only = std::move(values);
  return k;
}

// Accepted only as the engine's settings check where they are used (the doc says how).
ConfigKey only_checked(ConfigKey k) {
  k.use = KeyUse::Only;
  return k;
}

ConfigKey refused(std::string name, std::string why) {
  ConfigKey k = config_key(std::move(name), ConfigType::String, "", std::move(why));
  k.use = KeyUse::Refused;
  return k;
}

ConfigKey disabled(std::string name, std::string why) {
  ConfigKey k = config_key(std::move(name), ConfigType::Block, "{}", std::move(why));
  k.use = KeyUse::Disabled;
  return k;
}

ConfigKey flag_only(std::string name, bool value, std::string why) {
  return only(
      config_key(std::move(name), ConfigType::Bool, value ? "true" : "false", std::move(why)),
      {value ? "true" : "false"});
}

// DeepSpeed's keys beyond the engine's own knobs (engine_keys), each of which acts, is
// refused with its reason, or is accepted only with the values that describe what zerort
// does anyway: a ds_config.json written for DeepSpeed (or for the Hugging Face Trainer,
// "auto" values included) loads, and nothing in it is silently left out.
std::vector<ConfigKey> deepspeed_keys() {
  constexpr int64_t kBig = int64_t{1} << 50;
  const std::string nvme =
      "zerort has no NVMe offload (offload to host memory is "
      "zero_optimization.offload_optimizer.device cpu): remove the key";
  ConfigKey sub_group =
      only_checked(config_int("zero_optimization.sub_group_size", 1000000000, 1, kBig,
                              "accepted from 1e9 (DeepSpeed's default) up: zerort updates each "
                              "rank's whole shard in one pass, as DeepSpeed does with a "
                              "sub-group at least the shard; smaller sub-groups bound what NVMe "
                              "offload swaps, which zerort does not do"));
  ConfigKey reuse = only_checked(config_int(
      "zero_optimization.stage3_max_reuse_distance", 1000000000, 0, kBig,
      "accepted at zero_optimization.stage3_max_live_parameters or more: zerort keeps released "
      "parameters by recency until more than stage3_max_live_parameters elements are "
      "resident, which keeps those reused within that distance, as DeepSpeed does with a "
      "reuse distance at least that"));
  ConfigKey prefetch = with_auto(
      only_checked(config_int("zero_optimization.stage3_prefetch_bucket_size", 6553600, 0, kBig,
                              "stage 3 prefetches the next gather group (one bucket of "
                              "zero_optimization.reduce_bucket_size elements, or one larger "
                              "parameter): accepted as \"auto\" or equal to "
                              "zero_optimization.reduce_bucket_size")),
      "zerort's prefetch: the next group of zero_optimization.reduce_bucket_size elements");
  ConfigKey persistence = with_auto(
      only(config_int("zero_optimization.stage3_param_persistence_threshold", 0, 0, kBig,
                      "zerort partitions every parameter at stage 3 and gathers small ones with "
                      "their bucket, which is what DeepSpeed saves by keeping them whole: "
                      "accepted as 0 or \"auto\""),
           {"0"}),
      "0: every parameter is partitioned", "0");
  ConfigKey comm_dtype = only_checked(config_choice(
      "communication_data_type", "fp32", {"fp32", "fp16", "bf16"},
      "accepted equal to the compute dtype (fp16.enabled, bf16.enabled), in which zerort "
      "reduces gradients"));
  ConfigKey accum_dtype = only_checked(config_choice(
      "data_types.grad_accum_dtype", "fp32", {"fp32", "fp16", "bf16"},
      "accepted equal to the compute dtype, in which zerort adds the micro-steps' gradients"));
  ConfigKey offload_pin = only_checked(
      config_key("zero_optimization.offload_optimizer.pin_memory", ConfigType::Bool, "true",
                 "accepted true, or false without optimizer offload: zerort keeps an offloaded "
                 "optimizer state in pinned host memory"));
  return {
      with_auto(config_int("train_batch_size", 0, 0, kBig,
                           "samples per optimizer step over all ranks: "
                           "train_micro_batch_size_per_gpu x gradient_accumulation_steps x "
                           "ranks; of the three, two set the third as in DeepSpeed (this "
                           "alone: one micro-step), and three that do not multiply out are an "
                           "error; 0: not given. The engine takes its accumulation from them "
                           "and zrt_engine_describe reports both sizes"),
                "the program's (zrt-gpt2, zrt-bert: --global-batch, or --batch x --grad-accum "
                "x ranks), else derived from the other two",
                "0"),
      with_auto(config_int("train_micro_batch_size_per_gpu", 0, 0, kBig,
                           "samples per micro-step and rank (the trainers' --batch); see "
                           "train_batch_size; 0: not given"),
                "the program's (zrt-gpt2, zrt-bert: --batch), else derived from the other two",
                "0"),
      config_int("steps_per_print", 0, 0, kBig,
                 "every this many optimizer steps rank 0 writes DeepSpeed's progress line "
                 "(step, learning rate, loss scale, skipped steps) to stderr, whatever "
                 "log_level says; 0: never"),
      config_choice("scheduler.type", "none",
                    {"none", "warmuplr", "warmupdecaylr", "warmupcosinelr"},
                    "DeepSpeed's learning rate schedulers (WarmupLR, WarmupDecayLR, "
                    "WarmupCosineLR, with their formulas), applied by zrt_engine_step after "
                    "each applied update, from the engine's step count (so a loaded "
                    "checkpoint resumes the schedule); none: the program sets the rate "
                    "(zrt_engine_set_lr, refused while a scheduler runs)"),
      with_auto(config_real("scheduler.params.warmup_min_lr", "0", "ZRT_WARMUP_MIN_LR",
                            "WarmupLR, WarmupDecayLR: the rate warmup starts from"),
                "0, as the Hugging Face Trainer fills it", "0"),
      with_auto(config_real("scheduler.params.warmup_max_lr", "0.001", "ZRT_WARMUP_MAX_LR",
                            "WarmupLR, WarmupDecayLR: the rate warmup reaches (unset: "
                            "optimizer.params.lr for WarmupLR, 0.001 for WarmupDecayLR, as "
                            "DeepSpeed)"),
                "the program's learning rate (the trainers: --lr), else optimizer.params.lr"),
      with_auto(config_int("scheduler.params.warmup_num_steps", 1000, 1, kBig,
                           "optimizer steps of warmup (DeepSpeed uses at least 2)"),
                "the program's (zrt-gpt2, zrt-bert: --warmup or their default)"),
      config_choice("scheduler.params.warmup_type", "log", {"log", "linear"},
                    "how warmup rises: log (DeepSpeed's default) or linear"),
      with_auto(config_int("scheduler.params.total_num_steps", 0, 0, kBig,
                           "WarmupDecayLR, WarmupCosineLR: the optimizer steps of the whole "
                           "run (needed by them)"),
                "the program's (zrt-gpt2, zrt-bert: --steps)"),
      config_real("scheduler.params.warmup_min_ratio", "0", "ZRT_WARMUP_MIN_RATIO",
                  "WarmupCosineLR: warmup starts from this share of optimizer.params.lr"),
      config_real("scheduler.params.cos_min_ratio", "0.0001", "ZRT_COS_MIN_RATIO",
                  "WarmupCosineLR: the share of optimizer.params.lr the cosine ends at"),
      only(config_int("scheduler.params.last_batch_iteration", -1, -1, kBig,
                      "accepted as -1: the schedule's position is the engine's step count, "
                      "which zrt_checkpoint_load restores"),
           {"-1"}),
      config_key("optimizer.params.adam_w_mode", ConfigType::Bool, "false",
                 "with optimizer.type adam: true runs AdamW (decoupled weight decay), as "
                 "DeepSpeed's Adam does by default; zerort's adam is Adam with L2 decay "
                 "unless this is true"),
      config_key("fp16.consecutive_hysteresis", ConfigType::Bool, "false",
                 "every step without overflow refills the hysteresis (DeepSpeed's "
                 "consecutive_hysteresis); false: only a doubling of the scale refills it"),
      flag_only("wall_clock_breakdown", false,
                "zerort has no per-phase timers to print; zrt_engine_step's report times "
                "the communication a step waited for"),
      flag_only("dump_state", false,
                "zerort does not print its state at start; zrt-info and "
                "zrt_context_describe / zrt_engine_describe show the resolved settings"),
      flag_only("prescale_gradients", false,
                "zerort averages gradients after summing them (prescale_gradients false)"),
      only(config_real("gradient_predivide_factor", "1", "ZRT_GRADIENT_PREDIVIDE_FACTOR",
                       "zerort divides the summed gradients by the ranks once, after the "
                       "reduction (a factor of 1)"),
           {"1"}),
      flag_only("sparse_gradients", false, "zerort reduces dense gradients only"),
      comm_dtype,
      accum_dtype,
      only(config_key("zero_allow_untested_optimizer", ConfigType::Bool, "false",
                      "accepted either way: zerort runs only its own optimizers, which all "
                      "support ZeRO, so there is no untested one to allow"),
           {"true", "false"}),
      flag_only("zero_force_ds_cpu_optimizer", true,
                "an offloaded optimizer always runs zerort's own CPU kernels"),
      flag_only("fp16.auto_cast", false,
                "zerort does not cast the program's inputs; the program computes in the "
                "dtype of its parameters"),
      flag_only("bf16.immediate_grad_update", false,
                "zerort adds the micro-steps' gradients in the compute dtype, as DeepSpeed "
                "does without immediate_grad_update"),
      flag_only("zero_optimization.contiguous_gradients", true,
                "zerort's gradient buckets are always contiguous buffers"),
      flag_only("zero_optimization.reduce_scatter", true,
                "zerort always reduce-scatters gradients at stages 1-3"),
      flag_only("zero_optimization.allgather_partitions", true,
                "zerort always all-gathers updated parameters"),
      flag_only("zero_optimization.round_robin_gradients", false,
                "zerort assigns each rank one slice of every bucket"),
      flag_only("zero_optimization.cpu_offload", false,
                "DeepSpeed's old spelling of optimizer offload: write "
                "zero_optimization.offload_optimizer.device cpu"),
      flag_only("zero_optimization.elastic_checkpoint", true,
                "zerort's checkpoints always load at any world size"),
      flag_only("zero_optimization.load_from_fp32_weights", true,
                "zerort always loads the fp32 master weights of a checkpoint"),
      flag_only("zero_optimization.ignore_unused_parameters", false,
                "zrt_engine_step needs every registered parameter's gradient "
                "(zrt_param_grad_ready; zeros for an unused one)"),
      flag_only("zero_optimization.stage3_gather_16bit_weights_on_model_save", true,
                "zerort's checkpoints always hold whole tensors, gathered from the shards "
                "(zrt-ckpt export writes them in 16 bits if asked)"),
      only_checked(config_key("zero_optimization.offload_param.pin_memory", ConfigType::Bool,
                              "true",
                              "accepted true, or false without parameter offload: zerort keeps "
                              "offloaded parameters in pinned host memory")),
      refused("zero_optimization.offload_param.nvme_path", nvme),
      refused("zero_optimization.offload_param.buffer_count", nvme),
      refused("zero_optimization.offload_param.buffer_size", nvme),
      refused("zero_optimization.offload_param.max_in_cpu", nvme),
      offload_pin,
      refused("zero_optimization.offload_optimizer.nvme_path", nvme),
      refused("zero_optimization.offload_optimizer.buffer_count", nvme),
      flag_only("zero_optimization.offload_optimizer.fast_init", false,
                "fast_init speeds up NVMe offload, which zerort does not do"),
      config_real("zero_optimization.offload_optimizer.ratio", "1", "ZRT_OFFLOAD_OPTIMIZER_RATIO",
                  "with zero_optimization.offload_optimizer.device cpu: the share of the "
                  "optimizer state kept in pinned host memory and updated on the CPU, 0 < ratio "
                  "<= 1; the rest stays on the device and is updated there (Megatron's "
                  "--optimizer-offload-fraction). The split falls on bucket boundaries: the "
                  "first buckets reduced in backward go to the CPU, at least ratio of the "
                  "state (zrt_engine_describe gives the share taken as offload_share). Not with "
                  "zero_optimization.offload_param or LAMB; zrt-plan --offload-ratio auto picks "
                  "one"),
      sub_group,
      reuse,
      prefetch,
      persistence,
      only(config_key("optimizer.params.bias_correction", ConfigType::Bool, "true",
                      "zerort's Adam, AdamW and LAMB always correct the moments' bias"),
           {"true"}),
      flag_only("optimizer.params.amsgrad", false, "zerort has no AMSGrad"),
      only(config_key("optimizer.params.torch_adam", ConfigType::Bool, "false",
                      "accepted either way: it picks which implementation of the same "
                      "update DeepSpeed runs; zerort runs its own"),
           {"true", "false"}),
      disabled("activation_checkpointing",
               "zerort has no activation checkpointing of its own: the program recomputes "
               "(zrt-gpt2 --recompute) or offloads activations (zrt_offload_push); accepted "
               "with every flag false"),
      disabled("flops_profiler", "zerort has no FLOPS profiler: accepted with enabled false"),
      disabled("tensorboard",
               "zerort writes no TensorBoard events: accepted with enabled "
               "false (the trainers' --json-metrics writes metrics)"),
      disabled("wandb", "zerort does not log to Weights & Biases: accepted with enabled false"),
      disabled("csv_monitor",
               "zerort writes no CSV monitor: accepted with enabled false "
               "(the trainers' --json-metrics writes metrics)"),
      disabled("comms_logger",
               "zerort has no communication logger: accepted with enabled false "
               "(zrt_engine_step's report counts the collectives and their bytes)"),
      disabled("amp",
               "zerort has no apex AMP: accepted with enabled false or \"auto\" (which "
               "the Hugging Face Trainer turns on only for apex); fp16.enabled and "
               "bf16.enabled set the compute dtype"),
  };
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
  ConfigKey reduce = with_auto(
      with_env(
          config_int("zero_optimization.reduce_bucket_size", 25 << 20 >> 2, 1, int64_t{1} << 40,
                     "gradient bucket size in elements (DeepSpeed's unit); 6553600 = 25 MiB of "
                     "fp32"),
          "ZRT_REDUCE_BUCKET_SIZE"),
      "the program's (zrt-gpt2, zrt-bert: hidden size squared, as the Hugging Face "
      "Trainer), else 6553600",
      "6553600");
  ConfigKey gather =
      with_env(config_int("zero_optimization.allgather_bucket_size", 25 << 20 >> 2, 1,
                          int64_t{1} << 40, "parameter all-gather bucket size in elements"),
               "ZRT_ALLGATHER_BUCKET_SIZE");
  ConfigKey betas =
      with_auto(with_env(config_key("optimizer.params.betas", ConfigType::DoubleList, "0.9,0.999",
                                    "Adam/LAMB moment coefficients [beta1, beta2]"),
                         "ZRT_OPTIMIZER_BETAS"),
                "the program's (the trainers: --beta1, --beta2 or their defaults)");
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
                             "cpu: a device engine's optimizer state in pinned host memory, "
                             "updated on the CPU (ZeRO-Offload; stages 1-3); refused on a host "
                             "engine, whose state is in host memory already"),
               "ZRT_OFFLOAD_OPTIMIZER"),
      with_env(config_choice("zero_optimization.offload_param.device", "none", {"none", "cpu"},
                             "cpu: at stage 3 on a device engine with the optimizer offloaded, "
                             "this rank's shard of the parameters lives in pinned host memory "
                             "and goes to the device just before each gather (ZeRO-Infinity's "
                             "parameter offload, without NVMe)"),
               "ZRT_OFFLOAD_PARAM"),
      with_env(config_choice(
                   "engine.offload_step", "during_backward", {"during_backward", "after_backward"},
                   "with zero_optimization.offload_optimizer.device cpu on a device engine: "
                   "during_backward updates each bucket's shard on the CPU as soon as its "
                   "gradient reaches the host, speculatively (no clipping, no skip), and "
                   "commits at zrt_engine_step, redoing the update from a saved copy when "
                   "clipping or a non-finite gradient changes it, so the result is the "
                   "after_backward step's bit for bit; it keeps a host copy of the shard's "
                   "master weights and moments (12 bytes a parameter with Adam). "
                   "after_backward: the whole update after the last reduction. LAMB always "
                   "steps after backward (its trust ratios need every shard)"),
               "ZRT_OFFLOAD_STEP"),
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
      with_auto(with_env(config_key("fp16.enabled", ConfigType::Bool, "false",
                                    "parameters and gradients in fp16 with fp32 master weights"),
                         "ZRT_FP16"),
                "the program's compute dtype (compute_dtype; the trainers: --dtype)"),
      with_auto(with_env(config_key("bf16.enabled", ConfigType::Bool, "false",
                                    "parameters and gradients in bf16 with fp32 master weights"),
                         "ZRT_BF16"),
                "the program's compute dtype (compute_dtype; the trainers: --dtype)"),
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
      with_auto(config_real("gradient_clipping", "0", "ZRT_GRADIENT_CLIPPING",
                            "clip the global gradient norm to this value; 0 disables clipping"),
                "the program's (the trainers: --grad-clip or their default)"),
      with_auto(with_env(config_int("gradient_accumulation_steps", 1, 1, 1 << 20,
                                    "micro-steps (zrt_engine_step calls) per optimizer step"),
                         "ZRT_GRADIENT_ACCUMULATION_STEPS"),
                "the program's (the trainers: --grad-accum), else derived from "
                "train_batch_size and train_micro_batch_size_per_gpu, else 1",
                "1"),
      with_env(config_choice("optimizer.type", "adamw", {"adamw", "adam", "sgd", "lamb"},
                             "optimizer run on each rank's shard"),
               "ZRT_OPTIMIZER"),
      with_auto(config_real("optimizer.params.lr", "0.001", "ZRT_LR",
                            "learning rate (the peak of WarmupCosineLR)"),
                "the program's (the trainers: --lr or their default)"),
      betas,
      with_auto(config_real("optimizer.params.eps", "1e-8", "ZRT_OPTIMIZER_EPS",
                            "Adam/LAMB denominator epsilon"),
                "the program's (the trainers: --eps or their default)"),
      with_auto(config_real("optimizer.params.weight_decay", "0", "ZRT_WEIGHT_DECAY",
                            "weight decay (decoupled for AdamW and LAMB, L2 for Adam and SGD)"),
                "the program's (the trainers: --weight-decay or their default)"),
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
                    "fraction of the CPU, which a background save takes from training), and a "
                    "load reads the blocks that are not in the page cache so; off: both "
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

// The engine's knobs that DeepSpeed names alike (the rest are zerort's own).
bool deepspeed_name(const std::string &name) {
  for (const char *prefix : {"zero_optimization.", "optimizer.", "fp16.", "bf16."})
    if (name.rfind(prefix, 0) == 0) return true;
  return name == "gradient_clipping" || name == "gradient_accumulation_steps";
}

std::vector<ConfigKey> all_keys() {
  std::vector<ConfigKey> keys = library_keys();
  for (ConfigKey &k : engine_keys()) {
    // The optimizer's threads and kernels belong to the context (its thread pool).
    k.engine = k.name.rfind("kernels.", 0) != 0;
    k.deepspeed = deepspeed_name(k.name);
    keys.push_back(std::move(k));
  }
  for (ConfigKey &k : deepspeed_keys()) {
    k.engine = true;
    k.deepspeed = true;
    keys.push_back(std::move(k));
  }
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
