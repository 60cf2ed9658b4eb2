#include "job_settings.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace training {

namespace {

std::string text_of(const nlohmann::json &v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return fmt::format("{:g}", v.get<double>());
  return v.dump();
}

const char *optimizer_key(zrt_optimizer_t o) {
  switch (o) {
    case ZRT_OPTIMIZER_ADAM:
      return "adam";
    case ZRT_OPTIMIZER_SGD:
      return "sgd";
    case ZRT_OPTIMIZER_LAMB:
      return "lamb";
    default:
      return "adamw";
  }
}

class Planner {
 public:
  Planner(const ConfigView &c, const TrainerSettings &t, JobSettings &job)
      : c_(c), t_(t), job_(job) {}

  // Whether the trainer sets `key` (see job_settings.hpp): given on the command line by
  // `option`, "auto" in the file (filled with `value`), or left at the defaults. Records
  // why for the lines.
  bool take(const std::string &key, bool given, const std::string &option,
            const std::string &value) {
    if (given) {
      job_.why[key] = option;
      return true;
    }
    if (c_.is_auto(key)) {
      job_.why[key] = fmt::format("auto {}: {}'s {}", c_.origin(key), t_.program, value);
      return true;
    }
    return !c_.set_outside(key);
  }

  // Leaves `field` to the configuration unless `take` says otherwise.
  void field(uint64_t bit, bool set) {
    if (!set) job_.engine.from_config |= bit;
  }

 private:
  const ConfigView &c_;
  const TrainerSettings &t_;
  JobSettings &job_;
};

}  // namespace

bool file_sets_batch(const ConfigView &c) {
  for (const char *key :
       {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"})
    if (c.source(key) == "file" || c.source(key) == "environment") return true;
  return false;
}

void print_settings(const std::vector<std::string> &lines, const std::string &program) {
  if (lines.empty()) return;
  fmt::print("settings that are not {}'s defaults:\n", program);
  for (const std::string &line : lines)
    fmt::print("  {}\n", line);
  std::fflush(stdout);
}

JobSettings plan_job_settings(const ConfigView &c, const TrainerSettings &t) {
  JobSettings job;
  EngineOptions &e = job.engine;
  Planner p(c, t, job);
  nlohmann::json settings = nlohmann::json::object();

  e.stage = t.stage.value;
  p.field(ZRT_ENGINE_PARAM_FIELD_STAGE, p.take("zero_optimization.stage", t.stage.given,
                                               "--zero-stage", std::to_string(t.stage.value)));

  // The dtype is two keys; "auto" in either takes the trainer's dtype unless the other one
  // is on in the file.
  std::string dtype = t.dtype.value;
  if (!t.dtype.given)
    for (const char *key : {"bf16.enabled", "fp16.enabled"})
      if (c.set_outside(key) && c.value(key) == true) dtype = key[0] == 'b' ? "bf16" : "fp16";
  if (dtype == "fp16")
    throw std::invalid_argument(fmt::format(
        "fp16.enabled is true ({}): {} computes in fp32 or bf16 (--dtype, bf16.enabled)",
        c.origin("fp16.enabled"), t.program));
  e.dtype = dtype == "bf16" ? ZRT_DTYPE_BF16 : ZRT_DTYPE_FP32;
  bool dtype_set = p.take("bf16.enabled", t.dtype.given, "--dtype", dtype);
  dtype_set = p.take("fp16.enabled", t.dtype.given, "--dtype", dtype) && dtype_set;
  if (c.is_auto("bf16.enabled") || c.is_auto("fp16.enabled")) dtype_set = true;
  p.field(ZRT_ENGINE_PARAM_FIELD_COMPUTE_DTYPE, dtype_set);

  e.optimizer.kind = t.optimizer.value;
  p.field(
      ZRT_ENGINE_PARAM_FIELD_OPTIMIZER,
      p.take("optimizer.type", t.optimizer.given, "--optimizer", optimizer_key(t.optimizer.value)));
  e.lr = t.lr.value;
  p.field(ZRT_ENGINE_PARAM_FIELD_LR,
          p.take("optimizer.params.lr", t.lr.given, "--lr", fmt::format("{:g}", t.lr.value)));
  // Both betas are one field: an option given for one keeps the file's other.
  const bool betas_given = t.beta1.given || t.beta2.given;
  e.optimizer.beta1 = t.beta1.value;
  e.optimizer.beta2 = t.beta2.value;
  if (betas_given && c.set_outside("optimizer.params.betas")) {
    const nlohmann::json &file = c.value("optimizer.params.betas");
    if (!t.beta1.given) e.optimizer.beta1 = file.at(0).get<double>();
    if (!t.beta2.given) e.optimizer.beta2 = file.at(1).get<double>();
  }
  p.field(ZRT_ENGINE_PARAM_FIELD_BETAS,
          p.take("optimizer.params.betas", betas_given,
                 t.beta1.given && t.beta2.given ? "--beta1, --beta2"
                 : t.beta1.given                ? "--beta1"
                                                : "--beta2",
                 fmt::format("[{:g}, {:g}]", e.optimizer.beta1, e.optimizer.beta2)));
  e.optimizer.eps = t.eps.value;
  p.field(ZRT_ENGINE_PARAM_FIELD_EPS,
          p.take("optimizer.params.eps", t.eps.given, "--eps", fmt::format("{:g}", t.eps.value)));
  e.optimizer.weight_decay = t.weight_decay.value;
  p.field(ZRT_ENGINE_PARAM_FIELD_WEIGHT_DECAY,
          p.take("optimizer.params.weight_decay", t.weight_decay.given, "--weight-decay",
                 fmt::format("{:g}", t.weight_decay.value)));
  e.optimizer.grad_clip = t.grad_clip.value;
  p.field(ZRT_ENGINE_PARAM_FIELD_GRADIENT_CLIPPING,
          p.take("gradient_clipping", t.grad_clip.given, "--grad-clip",
                 fmt::format("{:g}", t.grad_clip.value)));
  e.deterministic = t.deterministic.value;
  p.field(ZRT_ENGINE_PARAM_FIELD_DETERMINISTIC,
          p.take("zero.deterministic", t.deterministic.given, "--deterministic", "false"));
  e.memory = t.device.value == "host"   ? ZRT_ENGINE_MEMORY_HOST
             : t.device.value == "auto" ? ZRT_ENGINE_MEMORY_AUTO
                                        : ZRT_ENGINE_MEMORY_DEVICE;
  p.field(ZRT_ENGINE_PARAM_FIELD_MEMORY_SPACE,
          p.take("engine.memory_space", t.device.given, "--device", t.device.value));
  e.offload_optimizer = t.offload_optimizer.value;
  p.field(ZRT_ENGINE_PARAM_FIELD_OFFLOAD_OPTIMIZER,
          p.take("zero_optimization.offload_optimizer.device", t.offload_optimizer.given,
                 "--offload-optimizer", t.offload_optimizer.value ? "cpu" : "none"));

  // Batch sizes (DeepSpeed's three; the engine checks that they multiply out and derives
  // the one missing). The accumulation and the global batch go only when given: the file's
  // sizes may make them. The micro batch is the trainer's unless the file makes it.
  e.optimizer.accumulation_steps = t.accumulation.value;
  if (t.accumulation.given) job.why["gradient_accumulation_steps"] = "--grad-accum";
  p.field(ZRT_ENGINE_PARAM_FIELD_GRADIENT_ACCUMULATION_STEPS, t.accumulation.given);
  if (t.global_batch) {
    settings["train_batch_size"] = *t.global_batch;
    job.why["train_batch_size"] = "--global-batch";
  }
  const bool total_known = t.global_batch || c.set_outside("train_batch_size");
  const bool accumulation_known =
      t.accumulation.given || c.set_outside("gradient_accumulation_steps");
  const bool others_make_micro =
      c.set_outside("train_micro_batch_size_per_gpu") || (total_known && accumulation_known);
  const bool micro_auto = c.is_auto("train_micro_batch_size_per_gpu");
  if (t.batch.given || micro_auto || !others_make_micro) {
    settings["train_micro_batch_size_per_gpu"] = t.batch.value;
    if (t.batch.given)
      job.why["train_micro_batch_size_per_gpu"] = "--batch";
    else if (micro_auto)
      p.take("train_micro_batch_size_per_gpu", false, "", std::to_string(t.batch.value));
  }

  // Buckets: --bucket-mb is bytes for both; "auto" is the hidden size squared (the Hugging
  // Face Trainer's reduce_bucket_size).
  if (t.bucket_mb) {
    e.reduce_bucket_bytes = static_cast<int64_t>(*t.bucket_mb * 1024 * 1024);
    job.why["zero_optimization.reduce_bucket_size"] = "--bucket-mb";
    job.why["zero_optimization.allgather_bucket_size"] = "--bucket-mb";
  } else if (c.is_auto("zero_optimization.reduce_bucket_size")) {
    settings["zero_optimization.reduce_bucket_size"] = t.hidden * t.hidden;
    p.take("zero_optimization.reduce_bucket_size", false, "",
           fmt::format("hidden size squared, {}", t.hidden * t.hidden));
  }

  // The learning rate schedule.
  const std::string scheduler = c.value("scheduler.type").get<std::string>();
  if (scheduler != "none" && c.set_outside("scheduler.type")) {
    if (!t.schedule_options.empty()) {
      settings["scheduler.type"] = "none";
      job.schedule_note =
          fmt::format("the scheduler {} ({}) set aside for {}", scheduler,
                      c.origin("scheduler.type"), fmt::join(t.schedule_options, ", "));
    } else {
      job.engine_schedule = true;
      const bool total = scheduler != "warmuplr";
      if (p.take("scheduler.params.warmup_num_steps", false, "", std::to_string(t.warmup)) &&
          c.is_auto("scheduler.params.warmup_num_steps"))
        settings["scheduler.params.warmup_num_steps"] = t.warmup;
      if (total &&
          p.take("scheduler.params.total_num_steps", t.steps.given, "--steps",
                 std::to_string(t.steps.value)) &&
          (t.steps.given || c.is_auto("scheduler.params.total_num_steps")))
        settings["scheduler.params.total_num_steps"] = t.steps.value;
      // --lr is the peak: WarmupLR's and WarmupDecayLR's warmup_max_lr (WarmupCosineLR's
      // peak is the optimizer's rate, set above).
      if (scheduler != "warmupcosinelr" && t.lr.given &&
          c.set_outside("scheduler.params.warmup_max_lr")) {
        settings["scheduler.params.warmup_max_lr"] = t.lr.value;
        job.why["scheduler.params.warmup_max_lr"] = "--lr";
      }
    }
  }
  if (!settings.empty()) e.settings = settings.dump();
  return job;
}

// What an "auto" that the trainer left to the engine became, and why, where the engine says.
std::pair<std::string, std::string> auto_result(const nlohmann::json &resolved,
                                                const std::string &key) {
  const nlohmann::json &s = resolved.at("scheduler");
  if (key == "gradient_accumulation_steps" || key == "train_batch_size" ||
      key == "train_micro_batch_size_per_gpu") {
    const int64_t v = resolved.at(key).get<int64_t>();
    if (v > 0) return {std::to_string(v), "zerort's, from the other batch sizes"};
    return {"none", "no batch size given"};
  }
  if (key == "scheduler.params.warmup_min_lr" && s.contains("warmup_min_lr"))
    return {fmt::format("{:g}", s.at("warmup_min_lr").get<double>()), "zerort's"};
  if (key == "scheduler.params.warmup_max_lr" && s.contains("warmup_max_lr"))
    return {fmt::format("{:g}", s.at("warmup_max_lr").get<double>()),
            "zerort's, the learning rate"};
  if (key == "zero_optimization.stage3_param_persistence_threshold") return {"0", "zerort's"};
  if (key == "zero_optimization.stage3_prefetch_bucket_size")
    return {"the next gather group", "zerort's"};
  return {"auto", "zerort's"};
}

std::vector<std::string> settings_lines(const nlohmann::json &resolved, const ConfigView &config,
                                        const JobSettings &job) {
  std::vector<std::string> lines;
  bool outside = false;  // the file or the environment set something
  for (auto &[key, s] : resolved.at("settings").items()) {
    if (!config.engine_key(key)) continue;
    const std::string source = s.at("source").get<std::string>();
    std::string value = text_of(s.at("value"));
    auto why = job.why.find(key);
    outside = outside || source == "environment" || source.rfind("file", 0) == 0;
    if (value == "auto" && source != "params" && config.is_auto(key)) {
      const auto [result, reason] = auto_result(resolved, key);
      lines.push_back(fmt::format("{} {} (auto {}: {})", key, result, config.origin(key), reason));
      continue;
    }
    // A file that writes a default changes nothing: the lines list what differs.
    if (source.rfind("file", 0) == 0 && config.is_default(key, value)) continue;
    if (source == "environment") {
      const std::string over = why != job.why.end() && why->second.rfind("--", 0) == 0
                                   ? fmt::format(", over {}", why->second)
                                   : std::string();
      lines.push_back(fmt::format("{} {} ({}{})", key, value, config.origin(key), over));
    } else if (source.rfind("file", 0) == 0) {
      lines.push_back(fmt::format("{} {} ({})", key, value, config.origin(key)));
    } else if (source == "params" && why != job.why.end()) {
      lines.push_back(fmt::format("{} {} ({})", key, value, why->second));
    }
  }
  if (!job.schedule_note.empty()) lines.push_back("lr schedule: " + job.schedule_note);
  // Without a file or environment setting the options the user typed win over nothing.
  if (!outside) lines.clear();
  return lines;
}

std::string engine_schedule_text(const nlohmann::json &resolved, const ConfigView &config) {
  const nlohmann::json &s = resolved.at("scheduler");
  const std::string type = s.at("type").get<std::string>();
  if (type == "none") return "";
  std::string text =
      fmt::format("{} ({}): warmup {} steps ({})", type, config.origin("scheduler.type"),
                  s.at("warmup_num_steps").dump(), s.at("warmup_type").get<std::string>());
  if (type == "WarmupCosineLR")
    return text + fmt::format(" from {:g} of {:g}, cosine to {:g} of it at step {}",
                              s.at("warmup_min_ratio").get<double>(),
                              resolved.at("lr").get<double>(), s.at("cos_min_ratio").get<double>(),
                              s.at("total_num_steps").dump());
  text += fmt::format(" from {:.3g} to {:.3g}", s.at("warmup_min_lr").get<double>(),
                      s.at("warmup_max_lr").get<double>());
  if (type == "WarmupDecayLR")
    text += fmt::format(", linear decay to 0 at step {}", s.at("total_num_steps").dump());
  return text;
}

void take_resolved(const nlohmann::json &resolved, const ConfigView &config, int &batch,
                   OptimizerConfig &optimizer, LrSchedule &lr) {
  if (const int64_t micro = resolved.at("train_micro_batch_size_per_gpu").get<int64_t>(); micro > 0)
    batch = static_cast<int>(micro);
  optimizer.accumulation_steps = resolved.at("gradient_accumulation_steps").get<int>();
  const std::string kind = resolved.at("optimizer").get<std::string>();
  optimizer.kind = kind == "lamb"   ? ZRT_OPTIMIZER_LAMB
                   : kind == "adam" ? ZRT_OPTIMIZER_ADAM
                   : kind == "sgd"  ? ZRT_OPTIMIZER_SGD
                                    : ZRT_OPTIMIZER_ADAMW;
  optimizer.beta1 = resolved.at("betas").at(0).get<double>();
  optimizer.beta2 = resolved.at("betas").at(1).get<double>();
  optimizer.eps = resolved.at("eps").get<double>();
  optimizer.weight_decay = resolved.at("weight_decay").get<double>();
  optimizer.grad_clip = resolved.at("gradient_clipping").get<double>();
  const double floor = lr.max_lr > 0 ? lr.min_lr / lr.max_lr : 0;
  lr.max_lr = resolved.at("lr").get<double>();
  lr.min_lr = lr.max_lr * floor;
  lr.engine = engine_schedule_text(resolved, config);
}

}  // namespace training
