#include "step_time.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>

#include "files/regular_file.hpp"

namespace plan {

namespace {

[[noreturn]] void bad(const std::string &what) {
  throw std::invalid_argument(what);
}

// A fabric: bus bandwidth (bytes/s) inside a node and per rank between nodes, latency per
// call inside and between nodes, and the share of reductions that hides behind compute.
struct Fabric {
  const char *name;
  double intra_busbw, inter_busbw;
  double intra_alpha, inter_alpha;
  double overlap;
};

// H200 and H100 nodes: 8 GPUs on NVLink 4 through NVSwitch (900 GB/s per GPU), where NCCL's
// reduce-scatter and all-gather reach about 360 GB/s of bus bandwidth (nccl-tests on 8
// H100s); between nodes one 400 Gb/s NIC per GPU (ConnectX-7, NDR InfiniBand: 50 GB/s),
// taken at 90%, or 200 Gb/s (HDR). Latencies are nccl-tests' small-message times (tens of
// microseconds). NCCL runs on its own SMs beside the model's kernels.
const Fabric kFabrics[] = {
    {"nvlink4-ib400", 360e9, 45e9, 20e-6, 40e-6, 1.0},
    {"nvlink4-ib200", 360e9, 22.5e9, 20e-6, 40e-6, 1.0},
};

}  // namespace

std::vector<std::string> fabric_names() {
  std::vector<std::string> out;
  for (const Fabric &f : kFabrics)
    out.push_back(f.name);
  return out;
}

CommModel fabric_preset(const std::string &name, int nranks, int ranks_per_node) {
  for (const Fabric &f : kFabrics) {
    if (name != f.name) continue;
    // A ring's time for a collective of `bytes` over n ranks: (n-1)/n of the bytes through
    // the slowest link's bus bandwidth (twice for an all-reduce), plus the latency.
    const bool one_node = nranks <= ranks_per_node;
    const double busbw = one_node ? f.intra_busbw : std::min(f.intra_busbw, f.inter_busbw);
    const double alpha = one_node ? f.intra_alpha : f.inter_alpha;
    const double share = nranks > 1 ? static_cast<double>(nranks - 1) / nranks : 0;
    CommModel m;
    m.source = fmt::format("preset {}", f.name);
    m.reduce_scatter = {alpha, share / busbw};
    m.all_gather = {alpha, share / busbw};
    m.all_reduce = {2 * alpha, 2 * share / busbw};
    m.overlap = f.overlap;
    return m;
  }
  bad(fmt::format("--fabric {}: the presets are {}", name, fmt::join(fabric_names(), ", ")));
}

CommModel profile_from_file(const std::string &path, const std::string &backend, int np,
                            const std::string &dtype) {
  std::istringstream in;
  try {
    in.str(files::read_regular(path));
  } catch (const files::Error &e) {
    bad(fmt::format("--profile {}: cannot read the file: {}", path, e.reason()));
  }
  std::map<std::string, Fit> fits;
  std::map<std::string, std::string> unsound;
  std::vector<std::string> seen;  // backend@np of every fit, for the message
  int fit_lines = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      bad(fmt::format("--profile {}: not zrt-bench comm --json output (a line is not JSON)", path));
    if (j.value("bench", std::string()) != "comm_fit") continue;
    ++fit_lines;
    const std::string b = j.value("backend", std::string()), op = j.value("op", std::string());
    const std::string d = j.value("dtype", std::string("fp32"));
    const int n = j.value("np", 0);
    seen.push_back(fmt::format("{} {}@{}", d, b, n));
    if (b != backend || n != np || d != dtype) continue;
    if (!j.value("sound", false)) {
      unsound[op] = j.value("problem", std::string("marked unsound"));
      continue;
    }
    if (!j["alpha_us"].is_number() || !j["beta_ns_per_byte"].is_number())
      bad(
          fmt::format("--profile {}: the fit of {} on {} at np {} has no alpha_us or "
                      "beta_ns_per_byte",
                      path, op, b, n));
    fits[op] = {j["alpha_us"].get<double>() * 1e-6, j["beta_ns_per_byte"].get<double>() * 1e-9};
  }
  if (fit_lines == 0)
    bad(fmt::format("--profile {}: no comm_fit line: not zrt-bench comm --json output", path));
  CommModel m;
  m.source = fmt::format("{} ({} {} at np {})", path, dtype, backend, np);
  const std::pair<const char *, Fit *> wanted[] = {{"reduce_scatter", &m.reduce_scatter},
                                                   {"all_gather_in_place", &m.all_gather},
                                                   {"all_reduce", &m.all_reduce}};
  for (const auto &[op, fit] : wanted) {
    if (fits.count(op)) {
      *fit = fits[op];
      continue;
    }
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    if (unsound.count(op))
      bad(
          fmt::format("--profile {}: the fit of {} on {} at np {} in {} is not sound ({}): "
                      "measure more sizes (zrt-bench comm --min-bytes, --max-bytes)",
                      path, op, backend, np, dtype, unsound[op]));
    bad(fmt::format("--profile {}: no fit of {} on {} at np {} in {} (it has {})", path, op,
                    backend, np, dtype, fmt::join(seen, ", ")));
  }
  return m;
}

StepTime predict_step(const StepInputs &in, const CommModel &comm) {
  StepTime t;
  t.compute = in.flops / in.flops_per_second;
  t.optimizer = in.optimizer_bytes / in.optimizer_bytes_per_second;
  const zrt_plan_comm_t &c = in.comm;
  t.reduce = comm.reduce_scatter.seconds(c.reduce_scatter_calls, c.reduce_scatter_bytes) +
             comm.all_reduce.seconds(c.all_reduce_calls, c.all_reduce_bytes);
  t.gather = comm.all_gather.seconds(c.all_gather_calls, c.all_gather_bytes);
  // Each hides behind its window of compute, at most by the share the fabric lets overlap.
  const double share = std::clamp(in.overlap, 0.0, 1.0);
  const double reduce_hidden = std::min(t.reduce * share, t.compute * in.reduce_window);
  const double gather_hidden = std::min(t.gather * share, t.compute * in.gather_window);
  t.exposed = t.reduce - reduce_hidden + t.gather - gather_hidden;
  return t;
}

}  // namespace plan
