// zrt_plan_memory against the engine: for every stage, compute dtype, optimizer state,
// optimizer offload and bucket size, a plan of the engine this job makes reports exactly
// what zrt_engine_memory reports after zrt_engine_commit, and after a training step at
// stages 0-2 (whose buffers stay as they are); zrt_plan_comm gives the collectives and
// bytes the step report counts for that step. Runs wherever the mpi suites run: every np,
// backend, faked node and the emulated device.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/mpi_fixture.hpp"

namespace {

// Large parameters cut into several buckets, small ones packed, odd sizes padded.
const std::vector<std::vector<int64_t>> kPlanShapes = {{1000, 37}, {513},      {64, 64, 3},
                                                       {7},        {2049, 11}, {1}};

struct PlanCase {
  int stage;
  zrt_dtype_t dtype;
  zrt_optimizer_t optimizer;
  double momentum;
  int offload;
  int64_t bucket_bytes;
  bool device;
  size_t max_live = 0;  // stage 3's resident elements; 0: the engine's default
  int accumulation = 1;
  const char *settings = nullptr;  // the engine's params->settings (JSON), if any
};

std::string describe_case(const PlanCase &c) {
  return fmt::format(
      "stage {} dtype {} optimizer {} momentum {} offload {} buckets {} {} max_live {} "
      "accumulation {} settings {}",
      c.stage, static_cast<int>(c.dtype), static_cast<int>(c.optimizer), c.momentum, c.offload,
      c.bucket_bytes, c.device ? "device" : "host", c.max_live, c.accumulation,
      c.settings ? c.settings : "none");
}

zrt_engine_params_t plan_engine_params(const PlanCase &c) {
  zrt_engine_params_t p = {};
  p.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE | ZRT_ENGINE_PARAM_FIELD_COMPUTE_DTYPE |
                 ZRT_ENGINE_PARAM_FIELD_OPTIMIZER | ZRT_ENGINE_PARAM_FIELD_MOMENTUM |
                 ZRT_ENGINE_PARAM_FIELD_OFFLOAD_OPTIMIZER |
                 ZRT_ENGINE_PARAM_FIELD_REDUCE_BUCKET_BYTES | ZRT_ENGINE_PARAM_FIELD_MEMORY_SPACE;
  p.stage = c.stage;
  p.compute_dtype = c.dtype;
  p.optimizer = c.optimizer;
  p.momentum = c.momentum;
  p.offload_optimizer = c.offload;
  p.reduce_bucket_bytes = c.bucket_bytes;
  p.memory_space = c.device ? ZRT_ENGINE_MEMORY_DEVICE : ZRT_ENGINE_MEMORY_HOST;
  if (c.max_live > 0) {
    p.field_mask |= ZRT_ENGINE_PARAM_FIELD_MAX_LIVE_PARAMETERS;
    p.max_live_parameters = c.max_live;
  }
  p.field_mask |= ZRT_ENGINE_PARAM_FIELD_GRADIENT_ACCUMULATION_STEPS;
  p.gradient_accumulation_steps = c.accumulation;
  if (c.settings != nullptr) {
    p.field_mask |= ZRT_ENGINE_PARAM_FIELD_SETTINGS;
    p.settings = c.settings;
  }
  return p;
}

void expect_same_report(const zrt_memory_report_t &plan, const zrt_memory_report_t &engine,
                        const std::string &when) {
  SCOPED_TRACE(when);
  EXPECT_EQ(plan.parameter_count, engine.parameter_count);
  EXPECT_EQ(plan.parameters, engine.parameters);
  EXPECT_EQ(plan.gradients, engine.gradients);
  EXPECT_EQ(plan.master_weights, engine.master_weights);
  EXPECT_EQ(plan.optimizer_state, engine.optimizer_state);
  EXPECT_EQ(plan.buckets, engine.buckets);
  EXPECT_EQ(plan.total, engine.total);
  EXPECT_EQ(plan.device_bytes, engine.device_bytes);
  EXPECT_EQ(plan.host_bytes, engine.host_bytes);
  EXPECT_EQ(plan.node_shared_bytes, engine.node_shared_bytes);
  EXPECT_EQ(plan.node_shared_ranks, engine.node_shared_ranks);
}

void check_plan(const PlanCase &c) {
  SCOPED_TRACE(describe_case(c));
  const zrt_engine_params_t p = plan_engine_params(c);
  zrt_engine_h engine = nullptr;
  CHECK_OK(zrt_engine_create(test::context(), &p, &engine));
  std::vector<zrt_param_h> handles;
  for (size_t t = 0; t < kPlanShapes.size(); ++t) {
    zrt_param_h h = nullptr;
    CHECK_OK(zrt_param_register(engine, fmt::format("layer{}.w", t).c_str(), c.dtype,
                                static_cast<int>(kPlanShapes[t].size()), kPlanShapes[t].data(),
                                &h));
    handles.push_back(h);
  }
  CHECK_OK(zrt_engine_commit(engine));
  zrt_memory_report_t committed{};
  committed.field_mask = ZRT_MEMORY_REPORT_FIELD_ALL;
  CHECK_OK(zrt_engine_memory(engine, &committed));

  // The machine as the engine sees it: the backend it chose, the node it is on.
  size_t n = 0;
  CHECK_OK(zrt_engine_describe(engine, nullptr, 0, &n));
  std::string text(n + 1, '\0');
  CHECK_OK(zrt_engine_describe(engine, text.data(), text.size(), &n));
  const nlohmann::json d = nlohmann::json::parse(text.substr(0, n));
  const std::string backend = d["comm"]["backend"]["host"];
  zrt_plan_params_t machine = {};
  machine.field_mask = ZRT_PLAN_PARAM_FIELD_ALL & ~uint64_t{ZRT_PLAN_PARAM_FIELD_CONFIG_FILE};
  machine.nranks = test::size();
  machine.ranks_per_node = test::node_ranks();
  machine.device = c.device;
  machine.shared_window = backend == "shm" || backend == "hier";
  zrt_plan_h plan = nullptr;
  CHECK_OK(zrt_plan_create(&p, &machine, &plan));
  for (size_t t = 0; t < kPlanShapes.size(); ++t)
    CHECK_OK(zrt_plan_add_param(plan, fmt::format("layer{}.w", t).c_str(),
                                static_cast<int>(kPlanShapes[t].size()), kPlanShapes[t].data()));
  zrt_memory_report_t planned{};
  planned.field_mask = ZRT_MEMORY_REPORT_FIELD_ALL;
  CHECK_OK(zrt_plan_memory(plan, &planned));
  expect_same_report(planned, committed, "after commit on backend " + backend);

  // A step as a program takes it: forward gathers each parameter in registration order;
  // backward gathers it again and makes its gradient ready in the reverse order, the order
  // the buckets are formed in, so no bucket buffer beyond the planned ones is needed.
  int64_t bound = 0, most_gathered = 0;
  CHECK_OK(zrt_plan_gathered_bytes(plan, &bound));
  auto use = [&](zrt_param_h h) {
    CHECK_OK(zrt_param_gather(engine, h));
    zrt_memory_report_t now{};
    now.field_mask = ZRT_MEMORY_REPORT_FIELD_BUCKETS;
    CHECK_OK(zrt_engine_memory(engine, &now));
    most_gathered = std::max(most_gathered, now.buckets - planned.buckets);
  };
  for (zrt_param_h h : handles) {
    use(h);
    CHECK_OK(zrt_param_release(engine, h));
  }
  for (auto it = handles.rbegin(); it != handles.rend(); ++it) {
    zrt_param_h h = *it;
    void *g = nullptr;
    use(h);
    CHECK_OK(zrt_param_grad_data(engine, h, &g));
    CHECK_OK(zrt_param_grad_ready(engine, h));
    CHECK_OK(zrt_param_release(engine, h));
  }
  zrt_step_report_t report{};
  report.field_mask = ZRT_STEP_REPORT_FIELD_COMMUNICATION;
  CHECK_OK(zrt_engine_step(engine, &report));
  zrt_plan_comm_t comm{};
  comm.field_mask = ZRT_PLAN_COMM_FIELD_ALL;
  CHECK_OK(zrt_plan_comm(plan, &comm));
  const int64_t collectives =
      comm.reduce_scatter_calls + comm.all_gather_calls + comm.all_reduce_calls;
  if (c.accumulation == 1) {  // zrt_plan_comm's step is one micro-step
    EXPECT_EQ(comm.reduce_scatter_bytes, report.comm_reduce_scatter_bytes);
    EXPECT_EQ(comm.all_reduce_bytes, report.comm_all_reduce_bytes);
    if (c.max_live == 0) {  // everything stays gathered: backward gathers nothing again
      EXPECT_EQ(comm.all_gather_bytes, report.comm_all_gather_bytes);
      EXPECT_EQ(collectives, report.comm_collectives);
    } else {
      // Evicted groups are gathered again in backward, the ones kept are not: between one
      // gather per group and the plan's two.
      EXPECT_LE(report.comm_all_gather_bytes, comm.all_gather_bytes);
      EXPECT_GT(2 * report.comm_all_gather_bytes, comm.all_gather_bytes);
      EXPECT_LE(report.comm_collectives, collectives);
    }
  }
  if (c.stage < 3) {  // stage 3's gathers add groups that come and go
    zrt_memory_report_t stepped{};
    stepped.field_mask = ZRT_MEMORY_REPORT_FIELD_ALL;
    CHECK_OK(zrt_engine_memory(engine, &stepped));
    expect_same_report(planned, stepped, "after a step");
  } else {
    // Stage 3's gathered groups: what they held at the most, within the plan's bound.
    EXPECT_GT(most_gathered, 0);
    EXPECT_LE(most_gathered, bound);
  }
  CHECK_OK(zrt_plan_destroy(plan));
  CHECK_OK(zrt_engine_destroy(engine));
}

}  // namespace

namespace {

void check_every_case(bool device) {
  for (int stage = 0; stage <= 3; ++stage)
    for (zrt_dtype_t dtype : {ZRT_DTYPE_FP32, ZRT_DTYPE_BF16})
      for (int offload : {0, 1}) {
        // Offload moves a device engine's state: stages 1-3, on the device.
        if (offload && (stage == 0 || !device)) continue;
        for (int64_t buckets : {int64_t{4096}, int64_t{1} << 20}) {
          check_plan({stage, dtype, ZRT_OPTIMIZER_ADAMW, 0, offload, buckets, device});
          if (::testing::Test::HasFatalFailure()) return;
        }
        // One moment, and none.
        check_plan({stage, dtype, ZRT_OPTIMIZER_SGD, 0.9, offload, 4096, device});
        check_plan({stage, dtype, ZRT_OPTIMIZER_SGD, 0, offload, 4096, device});
        // Accumulation's landing slices (the step is the first micro-step of two).
        check_plan({stage, dtype, ZRT_OPTIMIZER_ADAMW, 0, offload, 4096, device, 0, 2});
        // Partial offload: the state split between the host and the device.
        if (offload)
          for (int accumulation : {1, 2})
            check_plan({stage, dtype, ZRT_OPTIMIZER_ADAMW, 0, offload, 4096, device, 0,
                        accumulation,
                        R"({"zero_optimization": {"offload_optimizer": {"ratio": 0.4}}})"});
        if (::testing::Test::HasFatalFailure()) return;
      }
  // Stage 3 with few resident elements: groups are evicted and gathered again.
  check_plan({3, ZRT_DTYPE_FP32, ZRT_OPTIMIZER_ADAMW, 0, 0, 4096, device, 5000});
}

}  // namespace

TEST(EnginePlan, ReportsTheHostEnginesMemoryToTheByte) {
  check_every_case(false);
}

// On the GPU, or on the emulated device (the mpi_emulated_device suites).
TEST(DeviceEnginePlan, ReportsTheDeviceEnginesMemoryToTheByte) {
  const std::string missing = test::device_missing();
  if (!missing.empty()) GTEST_SKIP() << missing;
  check_every_case(true);
}

TEST(EnginePlan, BadMachinesAndParametersAreClearErrors) {
  zrt_plan_params_t machine = {};
  machine.field_mask = ZRT_PLAN_PARAM_FIELD_NRANKS;
  machine.nranks = 0;
  zrt_plan_h plan = nullptr;
  EXPECT_EQ(zrt_plan_create(nullptr, &machine, &plan), ZRT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(test::mentions("nranks is 0"));
  machine.field_mask |= ZRT_PLAN_PARAM_FIELD_RANKS_PER_NODE;
  machine.nranks = 8;
  machine.ranks_per_node = 16;
  EXPECT_EQ(zrt_plan_create(nullptr, &machine, &plan), ZRT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(test::mentions("ranks_per_node is 16"));
  machine.field_mask = uint64_t{1} << 40;
  EXPECT_EQ(zrt_plan_create(nullptr, &machine, &plan), ZRT_ERR_INVALID_ARGUMENT);
  zrt_engine_params_t p = {};
  p.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE;
  p.stage = 5;
  EXPECT_NE(zrt_plan_create(&p, nullptr, &plan), ZRT_SUCCESS);
  EXPECT_TRUE(test::mentions("stage"));

  CHECK_OK(zrt_plan_create(nullptr, nullptr, &plan));
  zrt_memory_report_t report{};
  report.field_mask = ZRT_MEMORY_REPORT_FIELD_ALL;
  EXPECT_EQ(zrt_plan_memory(plan, &report), ZRT_ERR_INVALID_STATE);
  EXPECT_TRUE(test::mentions("no parameters"));
  const int64_t negative[] = {4, -3};
  EXPECT_EQ(zrt_plan_add_param(plan, "w", 2, negative), ZRT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(test::mentions("parameter 'w': shape[1] is -3"));
  const int64_t ok[] = {4, 3};
  CHECK_OK(zrt_plan_add_param(plan, "w", 2, ok));
  EXPECT_EQ(zrt_plan_add_param(plan, "w", 2, ok), ZRT_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(test::mentions("already registered"));
  CHECK_OK(zrt_plan_memory(plan, &report));
  EXPECT_EQ(report.parameter_count, 12);
  CHECK_OK(zrt_plan_destroy(plan));
  EXPECT_EQ(zrt_plan_destroy(plan), ZRT_ERR_INVALID_HANDLE);
}
