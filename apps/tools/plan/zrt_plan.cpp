// zrt-plan: what a model needs on a machine before an allocation is spent on it. Per rank:
// the bytes of parameters, gradients, master weights, optimizer state and buckets, from
// zrt_plan_memory (the engine's own layout code, so they are zrt_engine_memory's figures to
// the byte), the activations the model's program allocates (its own carving), and whether
// that fits the memory each rank has. --sweep prints the table of stages by node counts.
#include <fmt/format.h>
#include <zerort/zerort.h>
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "plan_model.hpp"
#include "step_time.hpp"
#include "training/metrics.hpp"
#include "training/model_state.hpp"
#include "training/plot.hpp"

namespace {

struct Options {
  std::string model = "gpt2";
  int64_t params = 0;
  int layers = 0, hidden = 0, heads = 0;
  int stage = 2;
  std::string dtype = "fp32", optimizer = "adamw";
  double momentum = 0;
  bool offload_optimizer = false;
  bool offload_param = false;  // stage 3: the parameter shard on the host
  std::string offload_step;    // engine.offload_step; empty: the configuration's
  // zero_optimization.offload_optimizer.ratio: empty, the configuration's; a share in
  // (0, 1]; "auto", chosen here (choose_offload_ratio).
  std::string offload_ratio;
  int64_t reduce_bucket_bytes = 0;  // 0: the engine's default (or the configuration file's)
  std::string config_file;
  int micro_batch = 1, seq = 0;  // seq 0: the model's positions
  int max_predictions = -1;      // BERT: masked tokens a sequence; < 0: zrt-bert's default
  std::string activations = "keep";
  int nodes = 1, ranks_per_node = 1;
  bool gpus = false;
  int64_t memory_per_rank = 0;
  int64_t host_memory_per_rank = 0;  // with --gpus: the host memory each rank may use
  std::string backend = "auto";
  bool json = false, sweep = false;
  std::string plot;  // a PNG of model states per rank against ranks, every stage
  // The step time: a communication model and the rates of compute and optimizer.
  std::string profile, fabric;
  double compute_tflops = 0, optimizer_gbs = 0;
  double cpu_optimizer_gbs = 0;  // the CPU's rate on the offloaded state
  double overlap = -1;           // < 0: the communication model's
  int cores_per_node = 0;        // 0: a core (or GPU) per rank
  int accumulation = 1;
};

// A failure of the planner's input: printed as "zrt-plan: ...", exit status 2.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(zrt_status_t status) {
  if (status != ZRT_SUCCESS) throw InputError(zrt_last_error_message());
}

zrt_dtype_t dtype_of(const std::string &name) {
  if (name == "fp32") return ZRT_DTYPE_FP32;
  if (name == "bf16") return ZRT_DTYPE_BF16;
  if (name == "fp16") return ZRT_DTYPE_FP16;
  throw InputError(fmt::format("--dtype {}: accepted values are fp32, bf16 and fp16", name));
}

zrt_optimizer_t optimizer_of(const std::string &name) {
  if (name == "adamw") return ZRT_OPTIMIZER_ADAMW;
  if (name == "adam") return ZRT_OPTIMIZER_ADAM;
  if (name == "lamb") return ZRT_OPTIMIZER_LAMB;
  if (name == "sgd") return ZRT_OPTIMIZER_SGD;
  throw InputError(
      fmt::format("--optimizer {}: accepted values are adamw, adam, lamb and sgd", name));
}

std::string optimizer_label(const Options &o) {
  return training::optimizer_label(optimizer_of(o.optimizer));
}

// One rank's figures for one (stage, nodes).
struct RankPlan {
  int stage = 0, nodes = 1, nranks = 1;
  zrt_memory_report_t report{};
  int64_t gathered = 0;  // stage 3: gathered parameters held at once, at most
  plan::ActivationBytes activations;
  int64_t deepspeed = -1;  // DeepSpeed's estimator's GPU bytes for the same states; -1: none
  zrt_plan_comm_t comm{};
  bool timed = false;  // a step time was asked for
  plan::StepTime step;
  std::string comm_source;
  double overlap = 0;
  // Optimizer offload on the GPU: the share of the state on the CPU (at a bucket boundary,
  // at least the ratio asked), and the timed step's CPU update and what backward hid of it.
  double offload_ratio = 1, offload_share = 0;
  double cpu_optimizer = 0, cpu_hidden = 0;
  std::string offload_choice;  // --offload-ratio auto: what was chosen, and why
  int64_t model_states() const { return report.total; }
  // What the memory per rank must hold: where the model computes (the GPU, or the host).
  int64_t needed(bool gpus) const {
    const int64_t states = gpus ? report.device_bytes : report.total;
    return states + gathered + activations.resident;
  }
};

// What DeepSpeed's estimators give per GPU for the model states of a mixed-precision Adam
// run, for comparison: estimate_zero2_model_states_mem_needs (stages 1 and 2,
// deepspeed/runtime/zero/stage_1_and_2.py): 4P + 16P/N, or 2P with the optimizer offloaded;
// estimate_zero3_model_states_mem_needs (stage3.py): 4 x the largest layer's parameters +
// 18P/N, or + 2P/N offloaded. The largest layer is taken as the largest tensor here.
// DeepSpeed has none for stage 0.
int64_t deepspeed_estimate(const Options &o, const plan::PlanModel &model, int stage, int nranks) {
  // Its estimators count fp16 or bf16 parameters and gradients with Adam's fp32 state.
  if (o.dtype == "fp32" || o.optimizer == "sgd") return -1;
  const bool offload = o.offload_optimizer;
  const int64_t p = model.parameters;
  int64_t largest = 0;
  for (const zrt::nn::TensorSpec &t : model.tensors)
    largest = std::max(largest, t.numel());
  if (stage == 1 || stage == 2) return offload ? 2 * p : 4 * p + 16 * p / nranks;
  if (stage == 3) return 4 * largest + (offload ? 2 : 18) * p / nranks;
  return -1;
}

// Bytes the optimizer streams per element it updates (its kernels read and write each
// array once; mixed precision reads a 16-bit gradient and writes a 16-bit copy besides the
// fp32 master weights): Adam(W) 28; LAMB 36 (its trust ratio reads weights and update
// again); SGD 20 with momentum, 12 without.
double optimizer_bytes_per_element(const Options &o) {
  if (o.optimizer == "lamb") return 36;
  if (o.optimizer == "sgd") return o.momentum > 0 ? 20 : 12;
  return 28;
}

// The step time of r's plan: its collectives through the profile or fabric, compute and
// optimizer at the given rates (shared by the ranks beyond the node's cores).
void time_step(const Options &o, const plan::PlanModel &model, RankPlan &r) {
  if (o.optimizer_gbs <= 0)
    throw InputError(
        "--compute-tflops asks for a step time: give --optimizer-gbs too (the "
        "bytes per second the optimizer streams on a rank)");
  plan::CommModel comm;
  try {
    if (r.nranks > 1 && !o.fabric.empty()) {
      comm = plan::fabric_preset(o.fabric, r.nranks, o.ranks_per_node);
    } else if (r.nranks > 1 && !o.profile.empty()) {
      // The backend the engine's collectives take: with a node-shared window, shm reads the
      // peers' buffers in place ("shm+mem" in zrt-bench comm).
      std::string backend = o.backend == "auto" ? (r.nodes > 1 ? "hier" : "shm") : o.backend;
      if (backend == "shm" && r.report.node_shared_ranks > 0) backend = "shm+mem";
      comm = plan::profile_from_file(o.profile, backend, r.nranks, o.dtype);
    } else if (r.nranks > 1) {
      throw InputError(
          "a step time on more than one rank needs --profile (zrt-bench comm "
          "--json output) or --fabric (" +
          fmt::format("{}", fmt::join(plan::fabric_names(), ", ")) + ")");
    }
  } catch (const std::invalid_argument &e) {
    throw InputError(e.what());
  }
  const double share = o.cores_per_node > 0
                           ? std::min(1.0, static_cast<double>(o.cores_per_node) /
                                               static_cast<double>(o.ranks_per_node))
                           : 1.0;
  plan::StepInputs in;
  in.flops = model.flops_per_token(o.seq) * o.micro_batch * o.seq * o.accumulation;
  // Recompute runs each block's forward again in backward: a third more.
  if (o.activations == "recompute") in.flops *= 4.0 / 3.0;
  in.flops_per_second = o.compute_tflops * 1e12 * share;
  const double elements = r.stage == 0 ? static_cast<double>(r.report.parameter_count)
                                       : static_cast<double>(r.report.parameter_count) / r.nranks;
  // Offloaded, the device updates its part (none with ratio 1) and the CPU the rest: after
  // backward both at once, during backward the CPU's part overlaps backward (the last
  // micro-step's, two thirds of its compute) and the device's follows the step's norm.
  // The copies over PCIe are not counted.
  const double state_bytes = elements * optimizer_bytes_per_element(o);
  const double f = r.offload_share;
  in.optimizer_bytes = state_bytes * (1 - f);
  in.optimizer_bytes_per_second = o.optimizer_gbs * 1e9 * share;
  in.comm = r.comm;
  // Stages 2-3 reduce every micro-step; 0-1 once, at the last.
  if (r.stage >= 2) {
    in.comm.reduce_scatter_calls *= o.accumulation;
    in.comm.reduce_scatter_bytes *= o.accumulation;
  }
  in.overlap = o.overlap >= 0 ? o.overlap : comm.overlap;
  // Backward is two thirds of the compute and forward one; stages 0-1 reduce in the last
  // micro-step's backward only, and stage 3 gathers in the first micro-step's forward.
  const double per_micro = 1.0 / o.accumulation;
  in.reduce_window = r.stage <= 1 ? 2.0 / 3.0 * per_micro : 2.0 / 3.0;
  in.gather_window = r.stage == 3 ? 1.0 / 3.0 * per_micro : 0.0;
  r.step = plan::predict_step(in, comm);
  if (f > 0) {
    if (o.cpu_optimizer_gbs <= 0)
      throw InputError(
          "a step time with optimizer offload needs --cpu-optimizer-gbs (the bytes per second "
          "the CPU optimizer streams for a rank)");
    r.cpu_optimizer = state_bytes * f / (o.cpu_optimizer_gbs * 1e9);
    const bool during = o.offload_step != "after_backward" && o.optimizer != "lamb";
    const double backward = r.step.compute * 2.0 / 3.0 / o.accumulation;
    r.cpu_hidden = during ? std::min(r.cpu_optimizer, backward) : 0;
    const double exposed_cpu = r.cpu_optimizer - r.cpu_hidden;
    r.step.optimizer =
        during ? exposed_cpu + r.step.optimizer : std::max(exposed_cpu, r.step.optimizer);
  }
  r.timed = true;
  r.comm_source = r.nranks > 1 ? comm.source : "one rank: no collectives";
  r.overlap = in.overlap;
}

RankPlan plan_one(const Options &o, const plan::PlanModel &model, int stage, int nodes) {
  RankPlan r;
  r.stage = stage;
  r.nodes = nodes;
  if (o.ranks_per_node < 1)
    throw InputError(
        fmt::format("--ranks-per-node is {}: a node has at least one rank", o.ranks_per_node));
  if (nodes < 1) throw InputError(fmt::format("--nodes is {}: at least one node", nodes));
  r.nranks = nodes * o.ranks_per_node;
  zrt_engine_params_t p = {};
  p.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE | ZRT_ENGINE_PARAM_FIELD_COMPUTE_DTYPE |
                 ZRT_ENGINE_PARAM_FIELD_OPTIMIZER | ZRT_ENGINE_PARAM_FIELD_MOMENTUM |
                 ZRT_ENGINE_PARAM_FIELD_OFFLOAD_OPTIMIZER | ZRT_ENGINE_PARAM_FIELD_MEMORY_SPACE;
  p.stage = stage;
  p.compute_dtype = dtype_of(o.dtype);
  p.optimizer = optimizer_of(o.optimizer);
  p.momentum = o.momentum;
  p.offload_optimizer = o.offload_optimizer ? 1 : 0;
  p.memory_space = o.gpus ? ZRT_ENGINE_MEMORY_DEVICE : ZRT_ENGINE_MEMORY_HOST;
  // Parameter offload and the CPU step's mode reach the engine as keys (they have no field
  // of their own), over --config's, when given: the engine checks them as it would a job's.
  nlohmann::json keys = nlohmann::json::object();
  if (o.offload_param) keys["zero_optimization"]["offload_param"]["device"] = "cpu";
  if (!o.offload_step.empty()) keys["engine"]["offload_step"] = o.offload_step;
  if (!o.offload_ratio.empty()) {
    try {
      size_t used = 0;
      r.offload_ratio = std::stod(o.offload_ratio, &used);
      if (used != o.offload_ratio.size()) throw std::invalid_argument("trailing text");
    } catch (const std::exception &) {
      throw InputError(
          fmt::format("--offload-ratio {}: a number in (0, 1], or auto", o.offload_ratio));
    }
    keys["zero_optimization"]["offload_optimizer"]["ratio"] = r.offload_ratio;
  }
  const std::string settings = keys.dump();
  if (!keys.empty()) {
    p.field_mask |= ZRT_ENGINE_PARAM_FIELD_SETTINGS;
    p.settings = settings.c_str();
  }
  // Accumulation adds landing slices at stages 2-3.
  if (o.accumulation < 1)
    throw InputError(fmt::format("--accumulation is {}: at least 1", o.accumulation));
  p.field_mask |= ZRT_ENGINE_PARAM_FIELD_GRADIENT_ACCUMULATION_STEPS;
  p.gradient_accumulation_steps = o.accumulation;
  if (o.reduce_bucket_bytes > 0) {
    p.field_mask |= ZRT_ENGINE_PARAM_FIELD_REDUCE_BUCKET_BYTES;
    p.reduce_bucket_bytes = o.reduce_bucket_bytes;
  }
  zrt_plan_params_t m = {};
  m.field_mask = ZRT_PLAN_PARAM_FIELD_NRANKS | ZRT_PLAN_PARAM_FIELD_RANKS_PER_NODE |
                 ZRT_PLAN_PARAM_FIELD_DEVICE | ZRT_PLAN_PARAM_FIELD_SHARED_WINDOW;
  m.nranks = r.nranks;
  m.ranks_per_node = o.ranks_per_node;
  m.device = o.gpus ? 1 : 0;
  // shm, and hier inside each node, put the engine's collective buffers in a node-shared
  // window (auto picks one of them for host memory).
  m.shared_window = o.backend == "auto" || o.backend == "shm" || o.backend == "hier";
  if (!o.config_file.empty()) {
    m.field_mask |= ZRT_PLAN_PARAM_FIELD_CONFIG_FILE;
    m.config_file = o.config_file.c_str();
  }
  zrt_plan_h h = nullptr;
  check(zrt_plan_create(&p, &m, &h));
  try {
    for (const zrt::nn::TensorSpec &t : model.tensors)
      check(
          zrt_plan_add_param(h, t.name.c_str(), static_cast<int>(t.shape.size()), t.shape.data()));
    r.report.field_mask = ZRT_MEMORY_REPORT_FIELD_ALL;
    check(zrt_plan_memory(h, &r.report));
    check(zrt_plan_gathered_bytes(h, &r.gathered));
    r.comm.field_mask = ZRT_PLAN_COMM_FIELD_ALL;
    check(zrt_plan_comm(h, &r.comm));
  } catch (...) {
    zrt_plan_destroy(h);
    throw;
  }
  zrt_plan_destroy(h);
  r.deepspeed = deepspeed_estimate(o, model, stage, r.nranks);
  try {
    r.activations = model.activations(o.micro_batch, o.seq, plan::activation_mode(o.activations),
                                      o.max_predictions);
  } catch (const std::invalid_argument &e) {
    throw InputError(e.what());
  }
  // The share offloaded: the host's bytes against those of the whole offload (all of them
  // are in proportion to it).
  if (o.gpus && o.offload_optimizer) {
    r.offload_share = 1;
    if (r.offload_ratio < 1) {
      Options whole = o;
      whole.offload_ratio = "1";
      whole.compute_tflops = 0;
      const RankPlan all = plan_one(whole, model, stage, nodes);
      r.offload_share =
          static_cast<double>(r.report.host_bytes) / static_cast<double>(all.report.host_bytes);
    }
  }
  if (o.compute_tflops > 0) time_step(o, model, r);
  return r;
}

// --offload-ratio auto: the ratios 0.05, 0.10 ... 1 (the engine takes each at a bucket
// boundary), keeping those whose GPU and host needs fit the memory given. With a step
// time, the fastest (the smallest share among equals); without one, the smallest share
// that fits (the GPU updates its state faster than the CPU).
RankPlan choose_offload_ratio(const Options &o, const plan::PlanModel &model) {
  const bool timed = o.compute_tflops > 0;
  if (!timed && o.memory_per_rank <= 0)
    throw InputError(
        "--offload-ratio auto balances the GPU's memory (--memory-per-rank) or the step time "
        "(--compute-tflops): give one");
  std::vector<RankPlan> fitting;
  double last_share = -1;
  for (int k = 1; k <= 20; ++k) {
    Options c = o;
    c.offload_ratio = fmt::format("{}", k / 20.0);
    RankPlan r = plan_one(c, model, o.stage, o.nodes);
    if (r.offload_share == last_share) continue;  // the same bucket boundary
    last_share = r.offload_share;
    const bool fits =
        (o.memory_per_rank <= 0 || r.needed(true) <= o.memory_per_rank) &&
        (o.host_memory_per_rank <= 0 || r.report.host_bytes <= o.host_memory_per_rank);
    if (fits) fitting.push_back(std::move(r));
  }
  if (fitting.empty())
    throw InputError(
        "--offload-ratio auto: no share of the optimizer state offloaded fits the memory given "
        "(each ratio needs more GPU or host memory than there is); see the plan with "
        "--offload-ratio 1");
  const RankPlan *best = &fitting.front();
  if (timed)
    for (const RankPlan &r : fitting)
      if (r.step.total() < best->step.total() * (1 - 1e-9)) best = &r;
  RankPlan chosen = *best;
  chosen.offload_choice =
      timed ? fmt::format("the fastest predicted step of the {} share(s) that fit", fitting.size())
            : std::string("the least offloaded share that fits the GPU's memory");
  return chosen;
}

// What stage 0 holds of parameters, gradients, master weights and moments (no buckets), the
// figure the apps' line compares with: 16 bytes a parameter for Adam and LAMB in any dtype,
// as the apps print it.
int64_t stage0_bytes(const Options &o, int64_t parameters) {
  const int64_t es = o.dtype == "fp32" ? 4 : 2;
  const int64_t moments = o.optimizer == "sgd" ? (o.momentum > 0 ? 1 : 0) : 2;
  return parameters * (2 * es + (es == 4 ? 0 : 4) + 4 * moments);
}

std::string bytes_text(int64_t bytes) {
  return training::format_bytes(bytes);
}

std::string seconds_text(double s) {
  return s >= 1 ? fmt::format("{:.2f} s", s) : fmt::format("{:.1f} ms", s * 1e3);
}

nlohmann::json rank_json(const Options &o, const plan::PlanModel &model, const RankPlan &r) {
  const zrt_memory_report_t &m = r.report;
  nlohmann::json per_rank = {{"parameters", m.parameters},
                             {"gradients", m.gradients},
                             {"master_weights", m.master_weights},
                             {"optimizer_state", m.optimizer_state},
                             {"buckets", m.buckets},
                             {"model_states_bytes", r.model_states()},
                             {"gathered_parameters_bytes", r.gathered},
                             {"activations_bytes", r.activations.resident},
                             {"activations_offloaded_bytes", r.activations.offloaded},
                             {"device_bytes", m.device_bytes},
                             {"host_bytes", m.host_bytes},
                             {"node_shared_bytes", m.node_shared_bytes},
                             {"needed_bytes", r.needed(o.gpus)},
                             {"deepspeed_estimate_bytes",
                              r.deepspeed >= 0 ? nlohmann::json(r.deepspeed) : nlohmann::json()}};
  nlohmann::json j = {{"model", model.name},
                      {"family", model.family},
                      {"parameters", model.parameters},
                      {"stage", r.stage},
                      {"dtype", o.dtype},
                      {"optimizer", o.optimizer},
                      {"offload_optimizer", o.offload_optimizer},
                      {"offload_param", o.offload_param},
                      {"nodes", r.nodes},
                      {"ranks_per_node", o.ranks_per_node},
                      {"nranks", r.nranks},
                      {"engine_memory", o.gpus ? "device" : "host"},
                      {"micro_batch", o.micro_batch},
                      {"seq", o.seq},
                      {"activations", o.activations},
                      {"per_rank", per_rank}};
  j["collectives"] = {{"reduce_scatter_calls", r.comm.reduce_scatter_calls},
                      {"reduce_scatter_bytes", r.comm.reduce_scatter_bytes},
                      {"all_gather_calls", r.comm.all_gather_calls},
                      {"all_gather_bytes", r.comm.all_gather_bytes},
                      {"all_reduce_calls", r.comm.all_reduce_calls},
                      {"all_reduce_bytes", r.comm.all_reduce_bytes}};
  if (o.gpus && o.offload_optimizer) {
    j["offload_ratio"] = r.offload_ratio;
    j["offload_share"] = r.offload_share;
    if (!r.offload_choice.empty()) j["offload_choice"] = r.offload_choice;
  }
  if (r.timed)
    j["step"] = {{"seconds", r.step.total()},
                 {"compute_seconds", r.step.compute},
                 {"optimizer_seconds", r.step.optimizer},
                 {"reduce_seconds", r.step.reduce},
                 {"gather_seconds", r.step.gather},
                 {"exposed_comm_seconds", r.step.exposed},
                 {"cpu_optimizer_seconds", r.cpu_optimizer},
                 {"cpu_optimizer_hidden_seconds", r.cpu_hidden},
                 {"overlap", r.overlap},
                 {"comm_model", r.comm_source}};
  if (o.host_memory_per_rank > 0 && o.gpus) {
    j["host_memory_per_rank"] = o.host_memory_per_rank;
    j["host_fits"] = r.report.host_bytes <= o.host_memory_per_rank;
  }
  if (o.memory_per_rank > 0) {
    j["memory_per_rank"] = o.memory_per_rank;
    j["fits"] = r.needed(o.gpus) <= o.memory_per_rank;
  }
  return j;
}

// "needs X of the Y each rank has: fits (N%)", or "...: does not fit".
std::string fit_text(int64_t need, int64_t have) {
  return fmt::format(
      "needs {} of the {} each rank has: {}", bytes_text(need), bytes_text(have),
      need <= have ? fmt::format("fits ({:.0f}%)",
                                 100.0 * static_cast<double>(need) / static_cast<double>(have))
                   : std::string("does not fit"));
}

void print_one(const Options &o, const plan::PlanModel &model, const RankPlan &r) {
  const zrt_memory_report_t &m = r.report;
  fmt::print(
      "zrt-plan: {} ({:.1f}M parameters), ZeRO stage {}, {}, {}{}, {} rank(s) ({} node(s) "
      "of {}), engine in {} memory\n",
      model.name, static_cast<double>(model.parameters) / 1e6, r.stage, o.dtype, optimizer_label(o),
      o.offload_optimizer ? " offloaded to the host" : "", r.nranks, r.nodes, o.ranks_per_node,
      o.gpus ? "GPU" : "host");
  training::StateMemory s;
  s.parameters = m.parameters;
  s.gradients = m.gradients;
  s.master_weights = m.master_weights;
  s.optimizer_state = m.optimizer_state;
  s.buckets = m.buckets;
  fmt::print(
      "model states per rank: {}\n",
      training::state_memory_breakdown(s, stage0_bytes(o, m.parameter_count), optimizer_label(o)));
  if (r.gathered > 0)
    fmt::print("gathered parameters (stage 3), at most: {}\n", bytes_text(r.gathered));
  fmt::print("activations per rank: {} (micro-batch {} x {} tokens, {}){}\n",
             bytes_text(r.activations.resident), o.micro_batch, o.seq, o.activations,
             r.activations.offloaded > 0 ? fmt::format(" + {} offloaded to host memory",
                                                       bytes_text(r.activations.offloaded))
                                         : std::string());
  if (o.gpus) {
    fmt::print("on the GPU: {} of model states; on the host: {}\n", bytes_text(m.device_bytes),
               bytes_text(m.host_bytes));
    if (r.deepspeed >= 0)
      fmt::print("DeepSpeed's estimator for the same model states: {} per GPU ({})\n",
                 bytes_text(r.deepspeed),
                 r.stage == 3 ? (o.offload_optimizer ? "4 x largest layer + 2P/N"
                                                     : "4 x largest layer + 18P/N")
                              : (o.offload_optimizer ? "2P" : "4P + 16P/N"));
  }
  if (o.gpus && o.offload_optimizer && (r.offload_ratio < 1 || !r.offload_choice.empty()))
    fmt::print(
        "optimizer offload: {:.1f}% of the state on the CPU (ratio {}{}), the rest "
        "updated on the GPU\n",
        100 * r.offload_share, r.offload_ratio,
        r.offload_choice.empty() ? std::string() : ", chosen: " + r.offload_choice);
  if (m.node_shared_bytes > 0)
    fmt::print("of which in the node-shared window ({} ranks): {}\n", m.node_shared_ranks,
               bytes_text(m.node_shared_bytes));
  if (r.timed)
    fmt::print(
        "step time per rank: {} = compute {} + optimizer {} + exposed communication {} "
        "(reductions {}, gathers {}, {:.0f}% overlap; {})\n",
        seconds_text(r.step.total()), seconds_text(r.step.compute), seconds_text(r.step.optimizer),
        seconds_text(r.step.exposed), seconds_text(r.step.reduce), seconds_text(r.step.gather),
        100 * r.overlap, r.comm_source);
  if (r.timed && r.cpu_optimizer > 0)
    fmt::print("CPU optimizer: {}, of which backward hides {}\n", seconds_text(r.cpu_optimizer),
               seconds_text(r.cpu_hidden));
  const int64_t need = r.needed(o.gpus);
  if (o.memory_per_rank > 0)
    fmt::print("{}\n", fit_text(need, o.memory_per_rank));
  else
    fmt::print("needs {} per rank\n", bytes_text(need));
  // Offload's side: the model states in host memory (activations offloaded come on top).
  if (o.gpus && o.host_memory_per_rank > 0)
    fmt::print("host memory: {}\n", fit_text(r.report.host_bytes, o.host_memory_per_rank));
}

// Node counts of a sweep: powers of two up to --nodes, and --nodes itself.
std::vector<int> sweep_nodes(int nodes) {
  std::vector<int> out;
  for (int n = 1; n < nodes; n *= 2)
    out.push_back(n);
  out.push_back(nodes);
  return out;
}

void print_sweep(const Options &o, const plan::PlanModel &model,
                 const std::vector<std::vector<RankPlan>> &table) {
  const std::vector<RankPlan> &first = table.front();
  fmt::print(
      "zrt-plan: {} ({:.1f}M parameters), {}, {}, {} rank(s) per node, engine in {} memory; "
      "per rank: model states + activations (micro-batch {} x {} tokens, {}){}\n",
      model.name, static_cast<double>(model.parameters) / 1e6, o.dtype, optimizer_label(o),
      o.ranks_per_node, o.gpus ? "GPU" : "host", o.micro_batch, o.seq, o.activations,
      o.memory_per_rank > 0 ? fmt::format("; * does not fit {}", bytes_text(o.memory_per_rank))
                            : std::string());
  std::string header = fmt::format("{:>7}", "stage");
  for (const RankPlan &r : first)
    header += fmt::format(" {:>16}", fmt::format("{} node(s)", r.nodes));
  fmt::print("{}\n", header);
  for (const std::vector<RankPlan> &row : table) {
    std::string line = fmt::format("{:>7}", row.front().stage);
    for (const RankPlan &r : row) {
      const int64_t need = r.needed(o.gpus);
      const bool over = o.memory_per_rank > 0 && need > o.memory_per_rank;
      line += fmt::format(" {:>16}", bytes_text(need) + (over ? " *" : ""));
    }
    fmt::print("{}\n", line);
  }
  if (first.front().timed) {
    fmt::print("step time per rank (compute + optimizer + exposed communication; {})\n{:>7}",
               first.back().comm_source, "stage");
    for (const RankPlan &r : first)
      fmt::print(" {:>16}", fmt::format("{} node(s)", r.nodes));
    fmt::print("\n");
    for (const std::vector<RankPlan> &row : table) {
      fmt::print("{:>7}", row.front().stage);
      for (const RankPlan &r : row)
        fmt::print(" {:>16}", seconds_text(r.step.total()));
      fmt::print("\n");
    }
  }
  if (!o.gpus) return;
  // The model states alone, beside DeepSpeed's estimators for them (deepspeed_estimate()).
  fmt::print(
      "model states per GPU [DeepSpeed's estimator: stages 1-2 4P + 16P/N, stage 3 4 x "
      "largest layer + 18P/N]\n{:>7}",
      "stage");
  for (const RankPlan &r : first)
    fmt::print(" {:>22}", fmt::format("{} node(s)", r.nodes));
  fmt::print("\n");
  for (const std::vector<RankPlan> &row : table) {
    fmt::print("{:>7}", row.front().stage);
    for (const RankPlan &r : row)
      fmt::print(" {:>22}",
                 fmt::format("{} [{}]", bytes_text(r.report.device_bytes),
                             r.deepspeed >= 0 ? bytes_text(r.deepspeed) : std::string("-")));
    fmt::print("\n");
  }
}

// Model states per rank against ranks, one line per stage (ZeRO's figure for this model),
// with the numbers in PNG's .tsv beside it.
void write_plot(const Options &o, const plan::PlanModel &model,
                const std::vector<std::vector<RankPlan>> &table) {
  const std::filesystem::path png = o.plot;
  std::filesystem::path data = png;
  data.replace_extension(".tsv");
  {
    std::ofstream out(data);
    out << "# ranks\tstage0_gib\tstage1_gib\tstage2_gib\tstage3_gib\n";
    for (size_t c = 0; c < table.front().size(); ++c) {
      out << table.front()[c].nranks;
      for (const std::vector<RankPlan> &row : table)
        out << fmt::format("\t{:.6f}", static_cast<double>(row[c].model_states()) / (1 << 30));
      out << "\n";
    }
    if (!out) throw InputError(fmt::format("--plot: cannot write {}", data.string()));
  }
  std::string plot = "plot ";
  for (size_t s = 0; s < table.size(); ++s)
    plot +=
        fmt::format("{}{} using 1:{} with linespoints lw 1.5 pt 7 title 'stage {}'", s ? ", " : "",
                    training::gnuplot_quoted(data.string()), s + 2, table[s].front().stage);
  training::run_gnuplot(
      fmt::format("set terminal pngcairo size 900,540 font 'sans,10'\nset output {}\n"
                  "set title {}\nset grid\nset logscale x 2\nset xlabel 'ranks ({} per "
                  "node)'\nset ylabel 'model states per rank (GiB)'\nset yrange [0:*]\n"
                  "set key right center\n{}\n",
                  training::gnuplot_quoted(png.string()),
                  training::gnuplot_quoted(fmt::format(
                      "{} ({:.1f}M parameters), {}, {}: model states per rank", model.name,
                      static_cast<double>(model.parameters) / 1e6, o.dtype, optimizer_label(o))),
                  o.ranks_per_node, plot),
      data);
}

// Options that only mean something beside others are refused alone rather than ignored.
void check_combinations(const Options &o, const CLI::App &app) {
  const bool timed = o.compute_tflops > 0;
  for (const char *name : {"--profile", "--fabric", "--optimizer-gbs", "--overlap",
                           "--cores-per-node", "--cpu-optimizer-gbs"})
    if (!timed && app.count(name) > 0)
      throw InputError(fmt::format("{} is for the step time: give --compute-tflops too", name));
  if (!o.profile.empty() && !o.fabric.empty())
    throw InputError("--profile and --fabric both given: choose one");
  if (app.count("--heads") > 0 && o.params <= 0)
    throw InputError("--heads is for a model given by its size (--params, --layers, --hidden)");
  if (app.count("--stage") > 0 && (o.sweep || !o.plot.empty()))
    throw InputError("--stage with --sweep or --plot: they cover stages 0-3");
  if (!o.offload_ratio.empty() && !(o.offload_optimizer && o.gpus))
    throw InputError(
        "--offload-ratio is the share of an offloaded optimizer state: give "
        "--gpus and --offload-optimizer too");
  if (o.offload_ratio == "auto" && (o.sweep || !o.plot.empty()))
    throw InputError(
        "--offload-ratio auto plans one stage on one machine: not with --sweep "
        "or --plot");
  if (app.count("--max-predictions") > 0 && o.model.rfind("bert", 0) != 0 &&
      !o.model.ends_with(".json"))
    throw InputError("--max-predictions is for BERT models");
}

int run(Options o) {
  const plan::PlanModel model = [&] {
    try {
      if (o.params > 0 || o.layers > 0 || o.hidden > 0) {
        if (o.params <= 0 || o.layers <= 0 || o.hidden <= 0)
          throw std::invalid_argument(
              "a model by its size needs --params, --layers and --hidden, each positive");
        return plan::generic_model(o.params, o.layers, o.hidden,
                                   o.heads > 0 ? o.heads : std::max(1, o.hidden / 128));
      }
      return plan::model_from_spec(o.model);
    } catch (const std::invalid_argument &e) {
      throw InputError(e.what());
    }
  }();
  if (o.seq == 0) o.seq = model.max_seq;
  std::vector<std::vector<RankPlan>> table;
  const bool every = o.sweep || !o.plot.empty();
  const std::vector<int> stages = every ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{o.stage};
  const std::vector<int> nodes = every ? sweep_nodes(o.nodes) : std::vector<int>{o.nodes};
  if (o.offload_ratio == "auto") {
    table.push_back({choose_offload_ratio(o, model)});
  } else {
    for (int stage : stages) {
      table.emplace_back();
      for (int n : nodes)
        table.back().push_back(plan_one(o, model, stage, n));
    }
  }
  if (!o.plot.empty()) {
    write_plot(o, model, table);
    if (!o.sweep && !o.json) {
      fmt::print("zrt-plan: {} (and its numbers beside it)\n", o.plot);
      return 0;
    }
  }
  if (o.json) {
    for (const auto &row : table)
      for (const RankPlan &r : row)
        fmt::print("{}\n", rank_json(o, model, r).dump());
  } else if (o.sweep) {
    print_sweep(o, model, table);
  } else {
    print_one(o, model, table.front().front());
  }
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{
      "zrt-plan: the memory a model needs per rank at each ZeRO stage on a given machine, "
      "computed by zerort's own engine layout (zrt_plan_memory) and the apps' own activation "
      "sizes"};
  Options o;
  app.add_option("--model", o.model,
                 "gpt2, gpt2-medium, gpt2-large, gpt2-xl, dN, bert-tiny ... bert-large, or a "
                 "JSON configuration (zrt-gpt2's, zrt-bert's or Hugging Face's config.json)")
      ->capture_default_str();
  app.add_option("--params", o.params, "a model by its size: parameters (with --layers, --hidden)")
      ->transform(CLI::AsNumberWithUnit(std::map<std::string, int64_t>{
          {"k", 1000}, {"m", 1000000}, {"b", 1000000000}, {"t", int64_t{1000000000000}}}));
  app.add_option("--layers", o.layers, "transformer blocks of a model given by its size");
  app.add_option("--hidden", o.hidden, "width of a model given by its size");
  app.add_option("--heads", o.heads, "attention heads of a model given by its size (hidden/128)");
  app.add_option("--stage", o.stage, "ZeRO stage")->capture_default_str();
  app.add_option("--dtype", o.dtype, "compute dtype: fp32, bf16, fp16")->capture_default_str();
  app.add_option("--optimizer", o.optimizer, "adamw, adam, lamb, sgd")->capture_default_str();
  app.add_option("--momentum", o.momentum, "SGD's momentum (0: no state)")->capture_default_str();
  app.add_flag("--offload-optimizer", o.offload_optimizer,
               "ZeRO-Offload (with --gpus): master weights and optimizer state in pinned host "
               "memory");
  app.add_flag("--offload-param", o.offload_param,
               "with --gpus, --stage 3 and --offload-optimizer: the parameter shard in pinned "
               "host memory too");
  app.add_option("--offload-step", o.offload_step,
                 "during_backward (the CPU step hidden behind backward, which keeps a saved "
                 "copy of the shard's state) or after_backward")
      ->check(CLI::IsMember({"during_backward", "after_backward"}));
  app.add_option("--offload-ratio", o.offload_ratio,
                 "with --offload-optimizer: the share of the optimizer state on the CPU, the "
                 "rest updated on the GPU (0 < ratio <= 1, at a bucket boundary), or auto: "
                 "the fastest predicted step that fits (with --compute-tflops), or the least "
                 "offloaded share that fits --memory-per-rank");
  app.add_option("--reduce-bucket-bytes", o.reduce_bucket_bytes,
                 "the engine's bucket size (default: the engine's, or --config's)")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--config", o.config_file, "the job's zerort JSON configuration");
  app.add_option("--micro-batch", o.micro_batch, "sequences per rank and micro-step")
      ->capture_default_str();
  app.add_option("--seq", o.seq, "tokens per sequence (default: the model's positions)");
  app.add_option("--max-predictions", o.max_predictions,
                 "BERT: masked tokens per sequence at most (default: zrt-bert's, round(0.15 x "
                 "seq))");
  app.add_option("--activations", o.activations, "keep, recompute or offload")
      ->capture_default_str();
  app.add_option("--nodes", o.nodes, "nodes (the largest, with --sweep)")->capture_default_str();
  app.add_option("--ranks-per-node", o.ranks_per_node, "ranks (GPUs) per node")
      ->capture_default_str();
  app.add_flag("--gpus", o.gpus, "each rank has a GPU and the engine lives on it");
  app.add_option("--memory-per-rank", o.memory_per_rank,
                 "memory each rank may use (a GPU's, or host memory / ranks): 141GB (10^9), "
                 "80GiB (2^30)")
      ->transform(CLI::AsSizeValue(true));
  app.add_option("--host-memory-per-rank", o.host_memory_per_rank,
                 "with --gpus: the host memory each rank may use for the model states offloaded "
                 "to it (the node's memory / ranks per node): 128GiB")
      ->transform(CLI::AsSizeValue(true));
  app.add_option("--backend", o.backend,
                 "the job's comm.backend: auto, shm or hier (a node-shared window for the "
                 "engine's buffers), mpi, ucx, nccl")
      ->capture_default_str();
  app.add_option("--profile", o.profile,
                 "step time: the job's collectives from zrt-bench comm --json output (its "
                 "comm_fit lines for the backend and rank count)");
  app.add_option("--fabric", o.fabric,
                 "step time: the collectives from a preset fabric (" +
                     fmt::format("{}", fmt::join(plan::fabric_names(), ", ")) + ")");
  app.add_option("--compute-tflops", o.compute_tflops,
                 "step time: the forward and backward rate a rank sustains, TFLOP/s");
  app.add_option("--optimizer-gbs", o.optimizer_gbs,
                 "step time: the bytes per second the optimizer streams on a rank, GB/s");
  app.add_option("--cpu-optimizer-gbs", o.cpu_optimizer_gbs,
                 "step time with optimizer offload: the bytes per second the CPU optimizer "
                 "streams for a rank, GB/s");
  app.add_option("--overlap", o.overlap,
                 "step time: the share of gradient reductions (and stage-3 gathers) that "
                 "compute hides (default: 1 for the fabrics, 0 for a profile)");
  app.add_option("--cores-per-node", o.cores_per_node,
                 "step time: cores (or GPUs) of a node, when ranks share them (default: one a "
                 "rank)");
  app.add_option("--accumulation", o.accumulation, "micro-steps per optimizer step")
      ->capture_default_str();
  app.add_flag("--json", o.json, "one JSON object per line, per plan");
  app.add_flag("--sweep", o.sweep, "stages 0-3 by node counts 1, 2, 4, ... up to --nodes");
  app.add_option("--plot", o.plot,
                 "draw model states per rank against ranks for stages 0-3 (node counts as "
                 "--sweep) into this PNG, with gnuplot; the numbers go beside it (.tsv)");
  CLI11_PARSE(app, argc, argv);
  try {
    check_combinations(o, app);
    return run(o);
  } catch (const InputError &e) {
    std::fprintf(stderr, "zrt-plan: %s\n", e.what());
    return 2;
  } catch (const std::exception &e) {  // a file that cannot be read, say
    std::fprintf(stderr, "zrt-plan: %s\n", e.what());
    return 2;
  }
}
