// The C entry points of zerort/plan.h.
#include <string>

#include "optim/engine_plan.hpp"
#include "optim/memory_report_fields.hpp"
#include "runtime/config.hpp"
#include "runtime/field_table.hpp"
#include "runtime/handle_table.hpp"
#include "zerort/plan.h"

using namespace zrt;

namespace {

// What zrt_plan_create takes from zrt_plan_params_t: the machine, and the job's file.
struct MachineTarget {
  PlanMachine machine;
  bool ranks_per_node_set = false;
  std::string config_file;
};

using PlanParams = zrt_plan_params_t;
using Row = ParamTable<PlanParams, MachineTarget>::Row;

const ParamTable<PlanParams, MachineTarget> kPlanParams{
    "zrt_plan_params_field",
    "machine",
    {
        Row{ZRT_PLAN_PARAM_FIELD_NRANKS, "nranks", nullptr, nullptr,
            [](const PlanParams &p, auto &, MachineTarget &t) { t.machine.nranks = p.nranks; }},
        Row{ZRT_PLAN_PARAM_FIELD_RANKS_PER_NODE, "ranks_per_node", nullptr, nullptr,
            [](const PlanParams &p, auto &, MachineTarget &t) {
              t.machine.ranks_per_node = p.ranks_per_node;
              t.ranks_per_node_set = true;
            }},
        Row{ZRT_PLAN_PARAM_FIELD_DEVICE, "device", nullptr, nullptr,
            [](const PlanParams &p, auto &, MachineTarget &t) {
              t.machine.device = p.device != 0;
            }},
        Row{ZRT_PLAN_PARAM_FIELD_SHARED_WINDOW, "shared_window", nullptr, nullptr,
            [](const PlanParams &p, auto &, MachineTarget &t) {
              t.machine.shared_window = p.shared_window != 0;
            }},
        Row{ZRT_PLAN_PARAM_FIELD_CONFIG_FILE, "config_file", nullptr, nullptr,
            [](const PlanParams &p, auto &, MachineTarget &t) {
              require_nonnull(p.config_file, "machine->config_file");
              t.config_file = p.config_file;
            }},
    }};

const ReportTable<zrt_plan_comm_t, EnginePlan::Collectives> kPlanComm{
    "zrt_plan_comm_field",
    "comm_p",
    {
        {ZRT_PLAN_COMM_FIELD_CALLS, "reduce_scatter_calls, all_gather_calls, all_reduce_calls",
         [](const EnginePlan::Collectives &c, zrt_plan_comm_t &o) {
           o.reduce_scatter_calls = c.reduce_scatter_calls;
           o.all_gather_calls = c.all_gather_calls;
           o.all_reduce_calls = c.all_reduce_calls;
         }},
        {ZRT_PLAN_COMM_FIELD_BYTES, "reduce_scatter_bytes, all_gather_bytes, all_reduce_bytes",
         [](const EnginePlan::Collectives &c, zrt_plan_comm_t &o) {
           o.reduce_scatter_bytes = c.reduce_scatter_bytes;
           o.all_gather_bytes = c.all_gather_bytes;
           o.all_reduce_bytes = c.all_reduce_bytes;
         }},
    }};

HandleTable<EnginePlan> &plan_table() {
  static HandleTable<EnginePlan> table("plan");
  return table;
}

EnginePlan &plan_from(zrt_plan_h h) {
  return plan_table().get(handle_value(h), "plan");
}

}  // namespace

extern "C" {

ZRT_API zrt_status_t zrt_plan_create(const zrt_engine_params_t *engine_params,
                                     const zrt_plan_params_t *machine, zrt_plan_h *plan_p) {
  return abi_call("zrt_plan_create", [&] {
    require_nonnull(plan_p, "plan_p");
    MachineTarget target;
    std::map<std::string, std::string> unused;
    kPlanParams.read(machine, unused, target);
    if (!target.ranks_per_node_set) target.machine.ranks_per_node = target.machine.nranks;
    // Defaults and the job's file: the environment of the machine that plans is not the
    // one of the machine planned for.
    const Config config = Config::resolve(ConfigSchema::library(), target.config_file, {}, nullptr);
    auto plan = std::make_unique<EnginePlan>(
        EngineSettings::resolve(config, engine_params, target.machine.nranks), target.machine);
    *plan_p = to_handle<zrt_plan_h>(plan_table().insert(std::move(plan)));
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_plan_destroy(zrt_plan_h plan) {
  return abi_call("zrt_plan_destroy", [&] {
    plan_table().remove(handle_value(plan), "plan");
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_plan_add_param(zrt_plan_h plan, const char *name, int ndim,
                                        const int64_t *shape) {
  return abi_call("zrt_plan_add_param", [&] {
    plan_from(plan).add_param(name, ndim, shape);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_plan_memory(zrt_plan_h plan, zrt_memory_report_t *report_p) {
  return abi_call("zrt_plan_memory", [&] {
    EnginePlan &p = plan_from(plan);
    require_nonnull(report_p, "report_p");
    zrt_memory_report_t out = *report_p;
    memory_report_table().fill(p.memory(), out);
    *report_p = out;
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_plan_gathered_bytes(zrt_plan_h plan, int64_t *bytes_p) {
  return abi_call("zrt_plan_gathered_bytes", [&] {
    EnginePlan &p = plan_from(plan);
    require_nonnull(bytes_p, "bytes_p");
    *bytes_p = static_cast<int64_t>(p.gathered_bound());
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_plan_comm(zrt_plan_h plan, zrt_plan_comm_t *comm_p) {
  return abi_call("zrt_plan_comm", [&] {
    EnginePlan &p = plan_from(plan);
    require_nonnull(comm_p, "comm_p");
    zrt_plan_comm_t out = *comm_p;
    kPlanComm.fill(p.collectives(), out);
    *comm_p = out;
    return ZRT_SUCCESS;
  });
}

}  // extern "C"
