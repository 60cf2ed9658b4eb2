// The C entry points of zerort/engine.h.
#include <nlohmann/json.hpp>

#include "comm/dtype.hpp"
#include "optim/engine_part.hpp"
#include "optim/memory_report_fields.hpp"
#include "optim/zero_engine.hpp"
#include "runtime/agree.hpp"
#include "runtime/field_table.hpp"
#include "runtime/settings_agreement.hpp"
#include "runtime/string_out.hpp"
#include "zerort/engine.h"

using namespace zrt;

namespace {

struct ParamSource {
  const ParamInfo &param;
  const char *name;  // valid while the engine lives
  zrt_dtype_t dtype;
};

const ReportTable<zrt_param_info_t, ParamSource> kParamInfo{
    "zrt_param_info_field",
    "info_p",
    {
        {ZRT_PARAM_INFO_FIELD_NAME, "name",
         [](const ParamSource &s, zrt_param_info_t &o) { o.name = s.name; }},
        {ZRT_PARAM_INFO_FIELD_DTYPE, "dtype",
         [](const ParamSource &s, zrt_param_info_t &o) { o.dtype = s.dtype; }},
        {ZRT_PARAM_INFO_FIELD_SHAPE, "ndim, shape, numel",
         [](const ParamSource &s, zrt_param_info_t &o) {
           o.ndim = static_cast<int>(s.param.shape.size());
           for (size_t d = 0; d < 8; ++d)
             o.shape[d] = d < s.param.shape.size() ? s.param.shape[d] : 0;
           o.numel = static_cast<int64_t>(s.param.numel);
         }},
    }};

const ReportTable<zrt_step_report_t, StepReport> kStepReport{
    "zrt_step_report_field",
    "report_p",
    {
        {ZRT_STEP_REPORT_FIELD_APPLIED, "applied",
         [](const StepReport &r, zrt_step_report_t &o) { o.applied = r.applied; }},
        {ZRT_STEP_REPORT_FIELD_SKIPPED, "skipped",
         [](const StepReport &r, zrt_step_report_t &o) { o.skipped = r.skipped; }},
        {ZRT_STEP_REPORT_FIELD_STEP, "step",
         [](const StepReport &r, zrt_step_report_t &o) { o.step = r.step; }},
        {ZRT_STEP_REPORT_FIELD_LOSS_SCALE, "loss_scale",
         [](const StepReport &r, zrt_step_report_t &o) { o.loss_scale = r.loss_scale; }},
        {ZRT_STEP_REPORT_FIELD_GRAD_NORM, "grad_norm",
         [](const StepReport &r, zrt_step_report_t &o) { o.grad_norm = r.grad_norm; }},
        {ZRT_STEP_REPORT_FIELD_SKIPPED_STEPS, "skipped_steps",
         [](const StepReport &r, zrt_step_report_t &o) { o.skipped_steps = r.skipped_steps; }},
        {ZRT_STEP_REPORT_FIELD_OFFLOAD_TIMES, "offload_copy_seconds, offload_exposed_seconds",
         [](const StepReport &r, zrt_step_report_t &o) {
           o.offload_copy_seconds = r.offload_copy_seconds;
           o.offload_exposed_seconds = r.offload_exposed_seconds;
         }},
        {ZRT_STEP_REPORT_FIELD_COMMUNICATION,
         "comm_wait_seconds, comm_collectives, comm_reduce_scatter_bytes, comm_all_gather_bytes, "
         "comm_all_reduce_bytes",
         [](const StepReport &r, zrt_step_report_t &o) {
           o.comm_wait_seconds = r.comm.wait_seconds;
           o.comm_collectives = static_cast<int64_t>(r.comm.collectives);
           o.comm_reduce_scatter_bytes = static_cast<int64_t>(r.comm.reduce_scatter_bytes);
           o.comm_all_gather_bytes = static_cast<int64_t>(r.comm.all_gather_bytes);
           o.comm_all_reduce_bytes = static_cast<int64_t>(r.comm.all_reduce_bytes);
         }},
        {ZRT_STEP_REPORT_FIELD_LR, "lr",
         [](const StepReport &r, zrt_step_report_t &o) { o.lr = r.lr; }},
        {ZRT_STEP_REPORT_FIELD_OFFLOAD_CPU, "offload_cpu_seconds, offload_cpu_exposed_seconds",
         [](const StepReport &r, zrt_step_report_t &o) {
           o.offload_cpu_seconds = r.offload_cpu_seconds;
           o.offload_cpu_exposed_seconds = r.offload_cpu_exposed_seconds;
         }},
    }};

// What drives the learning rate: {"type": "none"}, or the scheduler and the values it runs
// with.
nlohmann::json scheduler_json(const LrSchedulerSettings &l) {
  nlohmann::json j{{"type", lr_scheduler_name(l.type)}};
  if (l.type == LrSchedulerType::None) return j;
  j["source"] = l.origin;
  j["warmup_num_steps"] = l.warmup_num_steps;
  j["warmup_type"] = l.log_warmup ? "log" : "linear";
  if (l.type != LrSchedulerType::WarmupLR) j["total_num_steps"] = l.total_num_steps;
  if (l.type == LrSchedulerType::WarmupCosineLR) {
    j["warmup_min_ratio"] = l.warmup_min_ratio;
    j["cos_min_ratio"] = l.cos_min_ratio;
  } else {
    j["warmup_min_lr"] = l.warmup_min_lr;
    j["warmup_max_lr"] = l.warmup_max_lr;
  }
  return j;
}

Engine &engine_from(zrt_engine_h h) {
  return engine_table().get(handle_value(h), "engine");
}

// The engine's index of a parameter handle, checked to belong to this engine.
int param_index(Engine &engine, zrt_param_h h) {
  const ParamRef &ref = param_table().get(handle_value(h), "param");
  if (ref.engine != &engine) fail(ZRT_ERR_INVALID_HANDLE, "param belongs to another engine");
  return ref.index;
}

}  // namespace

extern "C" {

ZRT_API zrt_status_t zrt_engine_create(zrt_context_h context, const zrt_engine_params_t *params,
                                       zrt_engine_h *engine_p) {
  return abi_call("zrt_engine_create", [&] {
    Context &c = context_from(context);
    require_nonnull(engine_p, "engine_p");
    EngineSettings settings;
    // Settings are checked on every rank before any collective, and agreed.
    run_agreed(c.comm(), [&] { settings = EngineSettings::resolve(c, params); });
    check_same_settings(c.comm(), settings.agreed, "the engine's settings");
    std::unique_ptr<Engine> engine;
    run_agreed(c.comm(), [&] { engine = std::make_unique<Engine>(c, settings); });
    engine->creation_agreed();
    uintptr_t h = engine_table().insert(std::move(engine));
    c.part<EnginePart>().adopt(h);
    *engine_p = to_handle<zrt_engine_h>(h);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_engine_destroy(zrt_engine_h engine) {
  return abi_call("zrt_engine_destroy", [&] {
    Context &context = engine_from(engine).context();
    const bool was_broken = context.breakage().broken();
    destroy_engine(handle_value(engine));
    // The engine is gone either way; a timeout on the way is the caller's to know, since
    // the ranks are out of step from now on (zrt_finalize will not wait for them either).
    if (!was_broken && context.breakage().broken())
      fail(context.breakage().status(),
           "the engine is destroyed, but not every rank came to free its collective resources: "
           "{}",
           context.breakage().why());
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_param_register(zrt_engine_h engine, const char *name, zrt_dtype_t dtype,
                                        int ndim, const int64_t *shape, zrt_param_h *param_p) {
  return abi_call("zrt_param_register", [&] {
    Engine &e = engine_from(engine);
    require_nonnull(param_p, "param_p");
    int index = e.register_param(name, dtype, ndim, shape);
    uintptr_t h = param_table().insert(std::make_unique<ParamRef>(ParamRef{&e, index}));
    e.param_handles.push_back(h);
    *param_p = to_handle<zrt_param_h>(h);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_param_info(zrt_engine_h engine, zrt_param_h param,
                                    zrt_param_info_t *info_p) {
  return abi_call("zrt_param_info", [&] {
    Engine &e = engine_from(engine);
    const int index = param_index(e, param);
    require_nonnull(info_p, "info_p");
    zrt_param_info_t info = *info_p;
    kParamInfo.fill(ParamSource{e.param(index), e.param_name(index), e.settings().dtype}, info);
    *info_p = info;
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_engine_param_count(zrt_engine_h engine, int *count_p) {
  return abi_call("zrt_engine_param_count", [&] {
    Engine &e = engine_from(engine);
    require_nonnull(count_p, "count_p");
    *count_p = e.param_count();
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_engine_param_at(zrt_engine_h engine, int index, zrt_param_h *param_p) {
  return abi_call("zrt_engine_param_at", [&] {
    Engine &e = engine_from(engine);
    require_nonnull(param_p, "param_p");
    if (index < 0 || index >= e.param_count())
      fail(ZRT_ERR_INVALID_ARGUMENT, "index is {}: accepted values are 0 .. {}", index,
           e.param_count() - 1);
    *param_p = to_handle<zrt_param_h>(e.param_handles[static_cast<size_t>(index)]);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_engine_commit(zrt_engine_h engine) {
  return abi_call("zrt_engine_commit", [&] {
    engine_from(engine).commit();
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_param_set(zrt_engine_h engine, zrt_param_h param, const void *values,
                                   zrt_dtype_t dtype) {
  return abi_call("zrt_param_set", [&] {
    Engine &e = engine_from(engine);
    e.set_param(param_index(e, param), values, dtype);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_param_get(zrt_engine_h engine, zrt_param_h param, void *values,
                                   zrt_dtype_t dtype) {
  return abi_call("zrt_param_get", [&] {
    Engine &e = engine_from(engine);
    e.get_param(param_index(e, param), values, dtype);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_param_data(zrt_engine_h engine, zrt_param_h param, void **data_p) {
  return abi_call("zrt_param_data", [&] {
    Engine &e = engine_from(engine);
    int index = param_index(e, param);
    require_nonnull(data_p, "data_p");
    *data_p = e.param_data(index);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_param_grad_data(zrt_engine_h engine, zrt_param_h param, void **data_p) {
  return abi_call("zrt_param_grad_data", [&] {
    Engine &e = engine_from(engine);
    int index = param_index(e, param);
    require_nonnull(data_p, "data_p");
    *data_p = e.grad_data(index);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_param_grad_buffer(zrt_engine_h engine, zrt_param_h param, void **data_p,
                                           zrt_grad_write_t *write_p) {
  return abi_call("zrt_param_grad_buffer", [&] {
    Engine &e = engine_from(engine);
    int index = param_index(e, param);
    require_nonnull(data_p, "data_p");
    require_nonnull(write_p, "write_p");
    bool overwrite = false;
    void *data = e.grad_buffer(index, &overwrite);
    *data_p = data;
    *write_p = overwrite ? ZRT_GRAD_WRITE_OVERWRITE : ZRT_GRAD_WRITE_ADD;
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_param_grad_ready(zrt_engine_h engine, zrt_param_h param) {
  return abi_call("zrt_param_grad_ready", [&] {
    Engine &e = engine_from(engine);
    e.grad_ready(param_index(e, param));
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_engine_step(zrt_engine_h engine, zrt_step_report_t *report_p) {
  return abi_call("zrt_engine_step", [&] {
    Engine &e = engine_from(engine);
    // A bad mask fails every rank's step before it starts, not one rank's after it.
    StepReport r = e.step([&] {
      if (report_p != nullptr) kStepReport.check(*report_p);
    });
    if (report_p != nullptr) {
      zrt_step_report_t out = *report_p;
      kStepReport.fill(r, out);
      *report_p = out;
    }
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_param_set_weight_decay(zrt_engine_h engine, zrt_param_h param,
                                                double weight_decay) {
  return abi_call("zrt_param_set_weight_decay", [&] {
    Engine &e = engine_from(engine);
    e.set_weight_decay(param_index(e, param), weight_decay);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_engine_set_lr(zrt_engine_h engine, double lr) {
  return abi_call("zrt_engine_set_lr", [&] {
    engine_from(engine).set_lr(lr);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_engine_set_stream(zrt_engine_h engine, void *stream) {
  return abi_call("zrt_engine_set_stream", [&] {
    engine_from(engine).set_stream(stream);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_engine_loss_scale(zrt_engine_h engine, double *scale_p) {
  return abi_call("zrt_engine_loss_scale", [&] {
    Engine &e = engine_from(engine);
    require_nonnull(scale_p, "scale_p");
    *scale_p = e.loss_scale();
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_param_gather(zrt_engine_h engine, zrt_param_h param) {
  return abi_call("zrt_param_gather", [&] {
    Engine &e = engine_from(engine);
    e.gather(param_index(e, param));
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_param_release(zrt_engine_h engine, zrt_param_h param) {
  return abi_call("zrt_param_release", [&] {
    Engine &e = engine_from(engine);
    e.release(param_index(e, param));
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_engine_memory(zrt_engine_h engine, zrt_memory_report_t *report_p) {
  return abi_call("zrt_engine_memory", [&] {
    Engine &e = engine_from(engine);
    require_nonnull(report_p, "report_p");
    zrt_memory_report_t out = *report_p;
    memory_report_table().fill(e.memory(), out);
    *report_p = out;
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_engine_describe(zrt_engine_h engine, char *buf, size_t size,
                                         size_t *length_p) {
  return abi_call("zrt_engine_describe", [&] {
    const Engine &e = engine_from(engine);
    const EngineSettings &s = e.settings();
    nlohmann::json settings = nlohmann::json::object();
    for (const Setting &v : s.agreed)
      settings[v.name] = {{"value", v.value}, {"source", v.source}};
    nlohmann::json out{
        {"stage", s.stage},
        {"compute_dtype", dtype_name(s.dtype)},
        {"optimizer", optimizer_name(s.optimizer)},
        {"lr", s.lr},
        {"betas", {s.beta1, s.beta2}},
        {"eps", s.eps},
        {"weight_decay", s.weight_decay},
        {"reduce_bucket_bytes", s.reduce_bucket_bytes},
        {"allgather_bucket_bytes", s.allgather_bucket_bytes},
        {"overlap", s.overlap},
        {"offload_optimizer", s.offload_optimizer},
        {"offload_param", s.offload_param},
        {"offload_ratio", s.offload_ratio},
        {"offload_step", s.offload_during_backward ? "during_backward" : "after_backward"},
        {"gradient_clipping", s.gradient_clipping},
        {"gradient_accumulation_steps", s.accumulation_steps},
        // 0: not given (the program's business).
        {"train_batch_size", s.train_batch_size},
        {"train_micro_batch_size_per_gpu", s.micro_batch_size},
        {"scheduler", scheduler_json(s.scheduler)},
        {"deterministic", s.deterministic},
        {"check_grad_overflow", s.check_grad_overflow},
        {"memory_space", e.on_device() ? "device" : "host"},
        {"shared_buffers", s.shared_buffers ? "auto" : "off"},
        {"node_shared_ranks", e.memory_shared_ranks()},
        {"node_shared_fallbacks", e.memory_shared_fallbacks()},
        {"ranks", e.nranks()},
        {"settings", settings},
    };
    e.describe_comm(out["comm"]);
    if (e.committed()) {
      out["offload_share"] = e.offload_share();
      out["param_gather"] = e.param_gather();
    }
    copy_out(out.dump(), buf, size, length_p);
    return ZRT_SUCCESS;
  });
}

}  // extern "C"
