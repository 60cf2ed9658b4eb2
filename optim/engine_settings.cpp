#include "optim/engine_settings.hpp"

#include <map>
#include <optional>
#include <string>

#include "comm/dtype.hpp"
#include "optim/batch_size.hpp"
#include "runtime/field_table.hpp"

namespace zrt {

namespace {

using Params = zrt_engine_params_t;

// Fields that are no configuration key of their own: bucket sizes are bytes in the params
// struct but elements in the file (DeepSpeed's unit), converted once the dtype is known;
// the stream is a pointer.
struct NotKeys {
  std::optional<size_t> reduce, allgather;
  void *stream = nullptr;
};

std::string memory_space_text(const Params &p) {
  switch (p.memory_space) {
    case ZRT_ENGINE_MEMORY_HOST:
      return "host";
    case ZRT_ENGINE_MEMORY_DEVICE:
      return "device";
    case ZRT_ENGINE_MEMORY_AUTO:
      return "auto";
    default:
      break;
  }
  fail(ZRT_ERR_INVALID_ARGUMENT,
       "params->memory_space is {}: accepted values are ZRT_ENGINE_MEMORY_HOST, "
       "ZRT_ENGINE_MEMORY_DEVICE, ZRT_ENGINE_MEMORY_AUTO",
       static_cast<int>(p.memory_space));
}

std::string stage_text(const Params &p) {
  if (p.stage < 0 || p.stage > 3)
    fail(ZRT_ERR_INVALID_ARGUMENT, "params->stage is {}: accepted values are 0, 1, 2, 3", p.stage);
  return std::to_string(p.stage);
}

// params->settings: configuration keys of the engine, as a JSON object (dotted or nested
// names), layered like the other fields. A key that another field of params sets too, or a
// key of the context, is an error: it would be set twice, or not where the program thinks.
void set_settings(const Params &p, std::map<std::string, std::string> &settings, NotKeys &b) {
  if (p.settings == nullptr)
    fail(ZRT_ERR_INVALID_ARGUMENT,
         "params->settings is NULL: a JSON object of configuration keys, e.g. "
         "{{\"scheduler\": {{\"type\": \"WarmupLR\"}}}}");
  const nlohmann::json j = nlohmann::json::parse(p.settings, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    fail(ZRT_ERR_INVALID_ARGUMENT, "params->settings is not a JSON object: {}", p.settings);
  const ConfigSchema &schema = ConfigSchema::library();
  for (auto &[key, text] : config_entries(schema, j, "params->settings")) {
    if (!key->engine)
      fail(ZRT_ERR_INVALID_ARGUMENT,
           "params->settings sets {}, a setting of the context, not of an engine: set it for "
           "zrt_init (its params, the configuration file or {})",
           key->name, key->env_name());
    const bool bucket = (key->name == "zero_optimization.reduce_bucket_size" && b.reduce) ||
                        (key->name == "zero_optimization.allgather_bucket_size" && b.allgather);
    if (settings.count(key->name) != 0 || bucket)
      fail(ZRT_ERR_INVALID_ARGUMENT,
           "params->settings sets {}, which another field of params sets too: set it once",
           key->name);
    // Checked here, so that the message names the program's settings.
    (void)parse_config_value(*key, text, "params->settings");
    settings[key->name] = text;
  }
}

void set_compute_dtype(const Params &p, std::map<std::string, std::string> &settings, NotKeys &) {
  zrt_dtype_t d = p.compute_dtype;
  if (d != ZRT_DTYPE_FP32 && d != ZRT_DTYPE_BF16 && d != ZRT_DTYPE_FP16)
    fail(ZRT_ERR_NOT_SUPPORTED,
         "params->compute_dtype {} is not supported: accepted values are ZRT_DTYPE_FP32, "
         "ZRT_DTYPE_BF16, ZRT_DTYPE_FP16",
         dtype_name(d));
  settings["fp16.enabled"] = d == ZRT_DTYPE_FP16 ? "true" : "false";
  settings["bf16.enabled"] = d == ZRT_DTYPE_BF16 ? "true" : "false";
}

const ParamTable<Params, NotKeys> kTable{
    "zrt_engine_params_field",
    "params",
    {
        {ZRT_ENGINE_PARAM_FIELD_STAGE, "stage", "zero_optimization.stage", stage_text},
        {ZRT_ENGINE_PARAM_FIELD_COMPUTE_DTYPE, "compute_dtype", "fp16.enabled, bf16.enabled",
         nullptr, set_compute_dtype},
        {ZRT_ENGINE_PARAM_FIELD_OPTIMIZER, "optimizer", "optimizer.type",
         [](const Params &p) { return std::string(optimizer_name(p.optimizer)); }},
        {ZRT_ENGINE_PARAM_FIELD_LR, "lr", "optimizer.params.lr", number_text<&Params::lr>},
        {ZRT_ENGINE_PARAM_FIELD_BETAS, "beta1, beta2", "optimizer.params.betas",
         [](const Params &p) {
           return number_text<&Params::beta1>(p) + "," + number_text<&Params::beta2>(p);
         }},
        {ZRT_ENGINE_PARAM_FIELD_EPS, "eps", "optimizer.params.eps", number_text<&Params::eps>},
        {ZRT_ENGINE_PARAM_FIELD_WEIGHT_DECAY, "weight_decay", "optimizer.params.weight_decay",
         number_text<&Params::weight_decay>},
        {ZRT_ENGINE_PARAM_FIELD_MOMENTUM, "momentum", "optimizer.params.momentum",
         number_text<&Params::momentum>},
        {ZRT_ENGINE_PARAM_FIELD_NESTEROV, "nesterov", "optimizer.params.nesterov",
         flag_text<&Params::nesterov>},
        {ZRT_ENGINE_PARAM_FIELD_REDUCE_BUCKET_BYTES, "reduce_bucket_bytes",
         "zero_optimization.reduce_bucket_size", nullptr,
         [](const Params &p, std::map<std::string, std::string> &, NotKeys &b) {
           b.reduce = p.reduce_bucket_bytes;
         }},
        {ZRT_ENGINE_PARAM_FIELD_ALLGATHER_BUCKET_BYTES, "allgather_bucket_bytes",
         "zero_optimization.allgather_bucket_size", nullptr,
         [](const Params &p, std::map<std::string, std::string> &, NotKeys &b) {
           b.allgather = p.allgather_bucket_bytes;
         }},
        {ZRT_ENGINE_PARAM_FIELD_OVERLAP, "overlap", "zero_optimization.overlap_comm",
         flag_text<&Params::overlap>},
        {ZRT_ENGINE_PARAM_FIELD_OFFLOAD_OPTIMIZER, "offload_optimizer",
         "zero_optimization.offload_optimizer.device",
         [](const Params &p) { return std::string(p.offload_optimizer ? "cpu" : "none"); }},
        {ZRT_ENGINE_PARAM_FIELD_GRADIENT_CLIPPING, "gradient_clipping", "gradient_clipping",
         number_text<&Params::gradient_clipping>},
        {ZRT_ENGINE_PARAM_FIELD_GRADIENT_ACCUMULATION_STEPS, "gradient_accumulation_steps",
         "gradient_accumulation_steps", number_text<&Params::gradient_accumulation_steps>},
        {ZRT_ENGINE_PARAM_FIELD_DETERMINISTIC, "deterministic", "zero.deterministic",
         flag_text<&Params::deterministic>},
        {ZRT_ENGINE_PARAM_FIELD_LOSS_SCALE, "loss_scale", "fp16.loss_scale",
         number_text<&Params::loss_scale>},
        {ZRT_ENGINE_PARAM_FIELD_INITIAL_SCALE_POWER, "initial_scale_power",
         "fp16.initial_scale_power", number_text<&Params::initial_scale_power>},
        {ZRT_ENGINE_PARAM_FIELD_LOSS_SCALE_WINDOW, "loss_scale_window", "fp16.loss_scale_window",
         number_text<&Params::loss_scale_window>},
        {ZRT_ENGINE_PARAM_FIELD_HYSTERESIS, "hysteresis", "fp16.hysteresis",
         number_text<&Params::hysteresis>},
        {ZRT_ENGINE_PARAM_FIELD_MIN_LOSS_SCALE, "min_loss_scale", "fp16.min_loss_scale",
         number_text<&Params::min_loss_scale>},
        {ZRT_ENGINE_PARAM_FIELD_MAX_LIVE_PARAMETERS, "max_live_parameters",
         "zero_optimization.stage3_max_live_parameters", number_text<&Params::max_live_parameters>},
        {ZRT_ENGINE_PARAM_FIELD_MEMORY_SPACE, "memory_space", "engine.memory_space",
         memory_space_text},
        {ZRT_ENGINE_PARAM_FIELD_SHARED_BUFFERS, "shared_buffers", "engine.shared_buffers",
         [](const Params &p) { return std::string(p.shared_buffers != 0 ? "auto" : "off"); }},
        {ZRT_ENGINE_PARAM_FIELD_STREAM, "stream", nullptr, nullptr,
         [](const Params &p, std::map<std::string, std::string> &, NotKeys &b) {
           b.stream = p.stream;
         }},
        // Last: it refuses keys the fields above set.
        {ZRT_ENGINE_PARAM_FIELD_SETTINGS, "settings", nullptr, nullptr, set_settings},
    }};

// A bucket size from the params struct, in bytes, unless the environment set the key.
size_t bucket_bytes(const Config &c, const char *key, const char *member,
                    std::optional<size_t> from_params, size_t from_config, size_t esize) {
  if (!from_params) return from_config;
  if (*from_params < esize)
    fail(ZRT_ERR_INVALID_ARGUMENT, "params->{} is {}: it must hold one element", member,
         *from_params);
  return c.source(key) == ConfigSource::Environment ? from_config : *from_params;
}

}  // namespace

const char *optimizer_name(zrt_optimizer_t o) {
  switch (o) {
    case ZRT_OPTIMIZER_ADAMW:
      return "adamw";
    case ZRT_OPTIMIZER_ADAM:
      return "adam";
    case ZRT_OPTIMIZER_SGD:
      return "sgd";
    case ZRT_OPTIMIZER_LAMB:
      return "lamb";
    default:
      break;
  }
  fail(ZRT_ERR_INVALID_ARGUMENT,
       "params->optimizer is {}: accepted values are ZRT_OPTIMIZER_ADAMW, ZRT_OPTIMIZER_ADAM, "
       "ZRT_OPTIMIZER_SGD, ZRT_OPTIMIZER_LAMB",
       static_cast<int>(o));
}

namespace {

// A key accepted only with values that match what zerort does, checked where the values it
// depends on are known: "KEY is VALUE (from ORIGIN): zerort supports only WHAT: doc".
void only(const Config &c, const char *key, const std::string &value, const std::string &what) {
  const ConfigKey *k = ConfigSchema::library().find(key);
  fail(ZRT_ERR_CONFIG, "{} is {} (from {}): zerort supports only {}: {}", key, value, c.origin(key),
       what, k != nullptr ? k->doc : "");
}

bool given(const Config &c, const char *key) {
  return c.source(key) != ConfigSource::Default;
}

BatchValue batch_value(const Config &c, const char *key) {
  BatchValue v;
  v.origin = c.origin(key);
  if (!given(c, key) || c.is_auto(key)) return v;
  if (int64_t n = c.get_int(key); n > 0) v.value = n;
  return v;
}

void resolve_scheduler(const Config &c, EngineSettings &s) {
  LrSchedulerSettings &l = s.scheduler;
  const std::string &type = c.get_string("scheduler.type");
  l.type = type == "warmuplr"         ? LrSchedulerType::WarmupLR
           : type == "warmupdecaylr"  ? LrSchedulerType::WarmupDecayLR
           : type == "warmupcosinelr" ? LrSchedulerType::WarmupCosineLR
                                      : LrSchedulerType::None;
  l.origin = c.origin("scheduler.type");
  // The program set the file's scheduler aside: its parameters went with it.
  if (l.type == LrSchedulerType::None && c.source("scheduler.type") == ConfigSource::Params) return;
  // The parameters each of DeepSpeed's schedulers takes (a parameter it does not take is an
  // error there too): WarmupLR, WarmupDecayLR, WarmupCosineLR.
  struct Takes {
    const char *key;
    bool warmup, decay, cosine;
  };
  constexpr Takes kTakes[] = {
      {"scheduler.params.warmup_min_lr", true, true, false},
      {"scheduler.params.warmup_max_lr", true, true, false},
      {"scheduler.params.warmup_num_steps", true, true, true},
      {"scheduler.params.warmup_type", true, true, true},
      {"scheduler.params.total_num_steps", false, true, true},
      {"scheduler.params.warmup_min_ratio", false, false, true},
      {"scheduler.params.cos_min_ratio", false, false, true},
      {"scheduler.params.last_batch_iteration", true, true, true},
  };
  for (const Takes &t : kTakes) {
    if (!given(c, t.key)) continue;
    const bool takes = l.type == LrSchedulerType::WarmupLR         ? t.warmup
                       : l.type == LrSchedulerType::WarmupDecayLR  ? t.decay
                       : l.type == LrSchedulerType::WarmupCosineLR ? t.cosine
                                                                   : false;
    if (!takes) {
      if (l.type == LrSchedulerType::None)
        fail(ZRT_ERR_CONFIG,
             "{} is set (from {}) but no scheduler.type names a scheduler (WarmupLR, "
             "WarmupDecayLR, WarmupCosineLR)",
             t.key, c.origin(t.key));
      fail(ZRT_ERR_CONFIG, "{} (from {}) is not a parameter of {} (scheduler.type from {})", t.key,
           c.origin(t.key), lr_scheduler_name(l.type), l.origin);
    }
  }
  if (l.type == LrSchedulerType::None) return;
  l.warmup_num_steps = c.get_int("scheduler.params.warmup_num_steps");
  l.log_warmup = c.get_string("scheduler.params.warmup_type") == "log";
  if (l.type != LrSchedulerType::WarmupLR)
    l.total_num_steps = c.get_int("scheduler.params.total_num_steps");
  if (l.type == LrSchedulerType::WarmupCosineLR) {
    l.warmup_min_ratio = c.get_double("scheduler.params.warmup_min_ratio");
    l.cos_min_ratio = c.get_double("scheduler.params.cos_min_ratio");
    l.base_lr = s.lr;
  } else {
    l.warmup_min_lr = c.get_double("scheduler.params.warmup_min_lr");
    // "auto" is the program's rate (the Hugging Face Trainer's learning_rate); unset,
    // WarmupLR takes the optimizer's rate and WarmupDecayLR 0.001, as in DeepSpeed.
    const char *max = "scheduler.params.warmup_max_lr";
    l.warmup_max_lr = c.is_auto(max)                        ? s.lr
                      : given(c, max)                       ? c.get_double(max)
                      : l.type == LrSchedulerType::WarmupLR ? s.lr
                                                            : 0.001;
  }
  l.validate();
}

// Offload moves a device engine's state to the host: on a host engine it would do nothing.
void refuse_host_offload(const Config &c, const EngineSettings &s, const std::string &host) {
  auto refuse = [&](const char *key) {
    fail(ZRT_ERR_NOT_SUPPORTED,
         "{} cpu (from {}) moves a device engine's state to host memory, and this engine "
         "is in host memory ({}): its state is in host memory already. Remove the key (or "
         "set it to none), or put the engine on the device (engine.memory_space device)",
         key, c.origin(key), host);
  };
  if (s.offload_optimizer) refuse("zero_optimization.offload_optimizer.device");
  if (s.offload_param) refuse("zero_optimization.offload_param.device");
}

// Partial offload: a share of the state on the CPU, the rest on the device. A ratio that
// would change nothing is refused rather than ignored.
void check_offload_ratio(const Config &c, const EngineSettings &s) {
  const char *key = "zero_optimization.offload_optimizer.ratio";
  if (!(s.offload_ratio > 0 && s.offload_ratio <= 1))
    fail(ZRT_ERR_CONFIG,
         "{} is {} (from {}): it must be > 0 and <= 1 (the share of the "
         "optimizer state on the CPU)",
         key, s.offload_ratio, c.origin(key));
  if (s.offload_ratio == 1) return;
  if (!s.offload_optimizer)
    fail(ZRT_ERR_CONFIG,
         "{} {} (from {}) is the share of an offloaded optimizer state, and the optimizer is "
         "not offloaded: set zero_optimization.offload_optimizer.device cpu, or remove the key",
         key, s.offload_ratio, c.origin(key));
  if (s.offload_param)
    fail(ZRT_ERR_NOT_SUPPORTED,
         "{} {} (from {}) keeps part of the optimizer state on the device, and "
         "zero_optimization.offload_param.device cpu keeps the parameters it updates on the "
         "host: use one or the other",
         key, s.offload_ratio, c.origin(key));
  if (s.optimizer == ZRT_OPTIMIZER_LAMB)
    fail(ZRT_ERR_NOT_SUPPORTED,
         "{} {} (from {}) splits the update between the CPU and the device, and LAMB's trust "
         "ratios need every part of a parameter in one place: offload all of it (ratio 1) or "
         "use AdamW",
         key, s.offload_ratio, c.origin(key));
}

// The keys that describe what zerort does anyway, where that depends on other settings.
void check_only_keys(const Config &c, const EngineSettings &s) {
  const std::string dtype = dtype_name(s.dtype);
  for (const char *key : {"communication_data_type", "data_types.grad_accum_dtype"})
    if (given(c, key) && c.get_string(key) != dtype)
      only(c, key, c.get_string(key), fmt::format("the compute dtype, {}", dtype));
  if (s.offload_param && !c.get_bool("zero_optimization.offload_param.pin_memory"))
    only(c, "zero_optimization.offload_param.pin_memory", "false",
         "true with zero_optimization.offload_param.device cpu");
  if (s.offload_optimizer && !c.get_bool("zero_optimization.offload_optimizer.pin_memory"))
    only(c, "zero_optimization.offload_optimizer.pin_memory", "false",
         "true with zero_optimization.offload_optimizer.device cpu");
  constexpr int64_t kOnePass = 1000000000;
  if (given(c, "zero_optimization.sub_group_size") &&
      c.get_int("zero_optimization.sub_group_size") < kOnePass)
    only(c, "zero_optimization.sub_group_size",
         std::to_string(c.get_int("zero_optimization.sub_group_size")), "1e9 and more");
  const char *reuse = "zero_optimization.stage3_max_reuse_distance";
  if (given(c, reuse) && static_cast<size_t>(c.get_int(reuse)) < s.max_live_elements)
    only(c, reuse, std::to_string(c.get_int(reuse)),
         fmt::format("zero_optimization.stage3_max_live_parameters ({}) and more",
                     s.max_live_elements));
  const char *prefetch = "zero_optimization.stage3_prefetch_bucket_size";
  const size_t bucket_elements = s.reduce_bucket_bytes / dtype_size(s.dtype);
  if (given(c, prefetch) && !c.is_auto(prefetch) &&
      static_cast<size_t>(c.get_int(prefetch)) != bucket_elements)
    only(c, prefetch, std::to_string(c.get_int(prefetch)),
         fmt::format("\"auto\" or zero_optimization.reduce_bucket_size ({} elements)",
                     bucket_elements));
}

}  // namespace

EngineSettings EngineSettings::resolve(const Context &context, const zrt_engine_params_t *p) {
  return resolve(context.config(), p, context.size());
}

EngineSettings EngineSettings::resolve(const Config &config, const zrt_engine_params_t *p,
                                       int ranks) {
  std::map<std::string, std::string> set;
  NotKeys buckets;
  kTable.read(p, set, buckets);

  Config c = config.with_params(set);
  EngineSettings s;
  bool fp16 = c.get_bool("fp16.enabled"), bf16 = c.get_bool("bf16.enabled");
  if (fp16 && bf16)
    fail(ZRT_ERR_CONFIG, "fp16.enabled and bf16.enabled are both true: choose one compute dtype");
  s.dtype = fp16 ? ZRT_DTYPE_FP16 : bf16 ? ZRT_DTYPE_BF16 : ZRT_DTYPE_FP32;
  const size_t es = dtype_size(s.dtype);
  s.stage = static_cast<int>(c.get_int("zero_optimization.stage"));
  // "auto" bucket sizes are the program's (params) or the default: the key's auto_value.
  s.reduce_bucket_bytes =
      bucket_bytes(c, "zero_optimization.reduce_bucket_size", "reduce_bucket_bytes", buckets.reduce,
                   static_cast<size_t>(c.get_int("zero_optimization.reduce_bucket_size")) * es, es);
  s.allgather_bucket_bytes = bucket_bytes(
      c, "zero_optimization.allgather_bucket_size", "allgather_bucket_bytes", buckets.allgather,
      static_cast<size_t>(c.get_int("zero_optimization.allgather_bucket_size")) * es, es);
  const std::string &opt = c.get_string("optimizer.type");
  s.optimizer = opt == "adam"   ? ZRT_OPTIMIZER_ADAM
                : opt == "sgd"  ? ZRT_OPTIMIZER_SGD
                : opt == "lamb" ? ZRT_OPTIMIZER_LAMB
                                : ZRT_OPTIMIZER_ADAMW;
  // DeepSpeed's Adam is AdamW unless adam_w_mode is false; zerort's is Adam unless it is
  // true. Other optimizers take no adam_w_mode (DeepSpeed's fail on it too).
  if (given(c, "optimizer.params.adam_w_mode")) {
    const bool w = c.get_bool("optimizer.params.adam_w_mode");
    if (s.optimizer == ZRT_OPTIMIZER_ADAM && w) s.optimizer = ZRT_OPTIMIZER_ADAMW;
    if (s.optimizer == ZRT_OPTIMIZER_ADAMW && !w && opt == "adamw")
      only(c, "optimizer.params.adam_w_mode", "false", "true with optimizer.type adamw");
    if (s.optimizer == ZRT_OPTIMIZER_SGD || s.optimizer == ZRT_OPTIMIZER_LAMB)
      fail(ZRT_ERR_CONFIG, "optimizer.params.adam_w_mode (from {}) is Adam's: optimizer.type is {}",
           c.origin("optimizer.params.adam_w_mode"), opt);
  }
  s.lr = c.get_double("optimizer.params.lr");
  const std::vector<double> &betas = c.get_doubles("optimizer.params.betas");
  s.beta1 = betas[0];
  s.beta2 = betas[1];
  s.eps = c.get_double("optimizer.params.eps");
  s.weight_decay = c.get_double("optimizer.params.weight_decay");
  s.momentum = c.get_double("optimizer.params.momentum");
  s.nesterov = c.get_bool("optimizer.params.nesterov");
  s.overlap = c.get_bool("zero_optimization.overlap_comm");
  s.offload_optimizer = c.get_string("zero_optimization.offload_optimizer.device") == "cpu";
  s.offload_param = c.get_string("zero_optimization.offload_param.device") == "cpu";
  s.offload_during_backward = c.get_string("engine.offload_step") == "during_backward";
  s.offload_ratio = c.get_double("zero_optimization.offload_optimizer.ratio");
  s.gradient_clipping = c.get_double("gradient_clipping");
  const BatchSizes batch = resolve_batch_sizes(
      batch_value(c, "train_batch_size"), batch_value(c, "train_micro_batch_size_per_gpu"),
      batch_value(c, "gradient_accumulation_steps"), ranks);
  s.accumulation_steps = static_cast<int>(batch.accumulation);
  s.train_batch_size = batch.train_batch;
  s.micro_batch_size = batch.micro_batch;
  s.steps_per_print = c.get_int("steps_per_print");
  s.deterministic = c.get_bool("zero.deterministic");
  s.check_grad_overflow = c.get_bool("check_grad_overflow");
  const std::string &space = c.get_string("engine.memory_space");
  s.memory_space = space == "device" ? EngineMemorySpace::Device
                   : space == "auto" ? EngineMemorySpace::Auto
                                     : EngineMemorySpace::Host;
  s.stream = buckets.stream;
  s.shared_buffers = c.get_string("engine.shared_buffers") == "auto";
  s.max_live_elements =
      static_cast<size_t>(c.get_int("zero_optimization.stage3_max_live_parameters"));
  s.agreed = c.agreed_settings();
  s.agreed.push_back({"reduce_bucket_bytes", std::to_string(s.reduce_bucket_bytes), "resolved"});
  s.agreed.push_back(
      {"allgather_bucket_bytes", std::to_string(s.allgather_bucket_bytes), "resolved"});

  double loss_scale = c.get_double("fp16.loss_scale");
  s.scaler.dynamic = s.dtype == ZRT_DTYPE_FP16 && loss_scale == 0;
  s.scaler.static_scale = loss_scale == 0 ? 1 : loss_scale;
  s.scaler.initial_scale_power = static_cast<int>(c.get_int("fp16.initial_scale_power"));
  s.scaler.window = c.get_int("fp16.loss_scale_window");
  s.scaler.hysteresis = static_cast<int>(c.get_int("fp16.hysteresis"));
  s.scaler.min_scale = c.get_double("fp16.min_loss_scale");
  s.scaler.consecutive_hysteresis = c.get_bool("fp16.consecutive_hysteresis");

  // Values whose range the schema cannot express.
  auto check = [](bool ok, const char *key, double value, const char *accepted) {
    if (!ok)
      fail(ZRT_ERR_CONFIG, "bad value {} for {}: accepted values are {}", value, key, accepted);
  };
  check(s.lr >= 0, "optimizer.params.lr", s.lr, "lr >= 0");
  check(s.beta1 >= 0 && s.beta1 < 1, "optimizer.params.betas[0]", s.beta1, "0 <= beta1 < 1");
  check(s.beta2 >= 0 && s.beta2 < 1, "optimizer.params.betas[1]", s.beta2, "0 <= beta2 < 1");
  check(s.eps > 0, "optimizer.params.eps", s.eps, "eps > 0");
  check(s.weight_decay >= 0, "optimizer.params.weight_decay", s.weight_decay, "weight_decay >= 0");
  check(s.momentum >= 0 && s.momentum < 1, "optimizer.params.momentum", s.momentum,
        "0 <= momentum < 1");
  check(s.gradient_clipping >= 0, "gradient_clipping", s.gradient_clipping,
        "0 (off) or a positive norm");
  check(loss_scale >= 0, "fp16.loss_scale", loss_scale, "0 (dynamic) or a positive scale");
  check(s.scaler.min_scale > 0, "fp16.min_loss_scale", s.scaler.min_scale, "a positive scale");
  if (s.offload_optimizer && s.stage == 0)
    fail(ZRT_ERR_NOT_SUPPORTED,
         "optimizer offload needs stage 1, 2 or 3 (ZeRO-Offload shards the optimizer state); "
         "the engine is configured for stage 0");
  if (s.memory_space == EngineMemorySpace::Host)
    refuse_host_offload(c, s, "engine.memory_space host, from " + c.origin("engine.memory_space"));
  if (s.offload_param && s.stage != 3)
    fail(ZRT_ERR_NOT_SUPPORTED,
         "zero_optimization.offload_param.device cpu (from {}) offloads stage 3's parameter "
         "shards: the engine is configured for stage {}, which keeps whole parameters on "
         "every rank. Use zero_optimization.stage 3, or remove the key",
         c.origin("zero_optimization.offload_param.device"), s.stage);
  if (s.offload_param && !s.offload_optimizer)
    fail(ZRT_ERR_NOT_SUPPORTED,
         "zero_optimization.offload_param.device cpu (from {}) needs "
         "zero_optimization.offload_optimizer.device cpu as well: the CPU updates the "
         "offloaded parameters in place",
         c.origin("zero_optimization.offload_param.device"));
  check_offload_ratio(c, s);
  if (s.nesterov && s.momentum == 0)
    fail(ZRT_ERR_CONFIG, "optimizer.params.nesterov needs a momentum > 0");
  resolve_scheduler(c, s);
  check_only_keys(c, s);
  return s;
}

}  // namespace zrt
