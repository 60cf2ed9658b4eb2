// zrt-info: what zerort sees on this job — version and build, the configuration and where
// each value came from, every rank's placement (node, cores, NUMA, GPU, NIC), and with
// --selfcheck a run of every collective against a serial reference.
//
//   mpirun -np 2 zrt-info              a table
//   mpirun -np 2 zrt-info --json       one JSON document (rank 0 prints it)
//   mpirun -np 2 zrt-info --selfcheck  the table, then the collective self-check
//   zrt-info --config-keys             every configuration key, its variable and default, and
//                                      what zerort does with each of DeepSpeed's keys
#include <fmt/format.h>
#include <mpi.h>
#include <zerort/zerort.h>
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "selfcheck.hpp"

using nlohmann::json;

namespace {

std::string describe(zrt_context_h ctx) {
  size_t length = 0;
  if (zrt_context_describe(ctx, nullptr, 0, &length) != ZRT_SUCCESS) return "{}";
  std::string text(length + 1, '\0');
  zrt_context_describe(ctx, text.data(), text.size(), &length);
  text.resize(length);
  return text;
}

// Gathers one string per rank on rank 0.
std::vector<std::string> gather_strings(const std::string &mine, int rank, int size) {
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<size_t>(size)), displs(static_cast<size_t>(size));
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    displs[static_cast<size_t>(r)] = total;
    total += lens[static_cast<size_t>(r)];
  }
  std::string all(static_cast<size_t>(rank == 0 ? total : 0), '\0');
  MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (rank == 0)
    for (int r = 0; r < size; ++r)
      out.push_back(all.substr(static_cast<size_t>(displs[static_cast<size_t>(r)]),
                               static_cast<size_t>(lens[static_cast<size_t>(r)])));
  return out;
}

std::string yes_no(const json &v) {
  return v.get<bool>() ? "yes" : "no";
}

void print_table(const std::vector<json> &ranks) {
  const json &r0 = ranks.front();
  const json &t0 = r0["topology"];
  fmt::print("zerort {} (API {})  {}\n", r0["version"].get<std::string>(),
             r0["api_version"].get<std::string>(), r0["mpi"]["library"].get<std::string>());
  const json &b = r0["build"];
  // What is built, then what this node can use: a CUDA build without a usable GPU is
  // not "CUDA yes".
  fmt::print("build: {} {}; built with CUDA {}, NCCL {}, UCX {}, HDF5 {}{}\n",
             b["type"].get<std::string>(), b["compiler"].get<std::string>(), yes_no(b["cuda"]),
             yes_no(b["nccl"]), yes_no(b["ucx"]), yes_no(b["hdf5"]),
             b["sanitizers"].get<bool>() ? ", sanitizers" : "");
  if (b["cuda"].get<bool>()) {
    const std::string cuda = t0["cuda"].get<std::string>();
    fmt::print("GPU on rank 0: {}\n",
               cuda == "ok" ? std::string("usable") : "none usable (" + cuda + ")");
  }
  const int size = r0["size"].get<int>(), nodes = t0["node_count"].get<int>();
  fmt::print("MPI thread level {}{}; {} rank{} on {} node{}{}\n",
             r0["mpi"]["thread_level"].get<std::string>(),
             r0["mpi"]["initialized_by_zerort"].get<bool>() ? " (initialized by zerort)" : "", size,
             size == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s",
             t0["nodes_faked"].get<bool>() ? " (faked by ranks_per_node)" : "");
  const json &c = r0["comm"];
  const json &choice = c["world"]["backend"];
  fmt::print("communication backends in this build: {}\n",
             fmt::join(c["backends"].get<std::vector<std::string>>(), ", "));
  std::string host = choice["host"].get<std::string>();
  if (choice["host_small"] != choice["host"])
    host += fmt::format(" ({} below {} bytes)", choice["host_small"].get<std::string>(),
                        choice["small_bytes"].get<size_t>());
  fmt::print("  world communicator, comm.backend={}: host memory -> {} [{}]; device memory -> {}\n",
             choice["requested"].get<std::string>(), host, choice["why"].get<std::string>(),
             choice["device"].is_null()
                 ? fmt::format("none ({})", choice.value("device_missing", std::string()))
                 : fmt::format("{} [{}]", choice["device"].get<std::string>(),
                               choice.value("device_why", std::string("requested"))));
  for (auto it = choice["created"].begin(); it != choice["created"].end(); ++it)
    if (!it->empty()) fmt::print("  {}: {}\n", it.key(), it->dump());
  std::string thread = "none";
  if (!c["thread"].is_null())
    thread = fmt::format("{} mode, {}", c["thread"]["mode"].get<std::string>(),
                         c["thread"]["binding"].get<std::string>());
  else if (c.contains("thread_missing"))
    thread = fmt::format("none ({})", c["thread_missing"].get<std::string>());
  double timeout = c["timeout"].get<double>();
  fmt::print("  watchdog: {}; progress thread: {}\n\n",
             timeout > 0 ? fmt::format("collectives fail after {:g} s", timeout)
                         : std::string("off (comm.timeout=0)"),
             thread);

  // One line per node.
  int last_node = -1;
  for (const json &r : ranks) {
    const json &t = r["topology"];
    if (t["node_id"].get<int>() == last_node) continue;
    last_node = t["node_id"].get<int>();
    std::vector<std::string> gpus, nics;
    for (const json &g : t["gpus"])
      gpus.push_back(
          fmt::format("{} [{}]", g["name"].get<std::string>(), g["pci_bus_id"].get<std::string>()));
    for (const json &n : t["nics"])
      nics.push_back(
          fmt::format("{} ({})", n["name"].get<std::string>(), n["type"].get<std::string>()));
    fmt::print("node {} ({}): {} package(s), {} cores, {} PUs, {} NUMA node(s)\n", last_node,
               t["hostname"].get<std::string>(), t["packages"].get<int>(), t["cores"].get<int>(),
               t["pus"].get<int>(), t["numa_nodes"].get<int>());
    fmt::print("  GPUs: {}\n  NICs: {}\n",
               gpus.empty() ? "none" : fmt::format("{}", fmt::join(gpus, ", ")),
               nics.empty() ? "none" : fmt::format("{}", fmt::join(nics, ", ")));
  }

  fmt::print("\n{:>5} {:>5} {:>7} {:>9} {:>10} {:>5} {:>4} {:>8}\n", "rank", "node", "local",
             "bound_by", "cpus", "numa", "gpu", "nic");
  for (const json &r : ranks) {
    const json &t = r["topology"];
    int gpu = t["gpu"].get<int>();
    std::string gpu_text =
        gpu < 0 ? "-"
                : std::to_string(t["gpus"][static_cast<size_t>(gpu)]["cuda_index"].get<int>());
    int numa = t["numa_node"].get<int>();
    std::string nic = t["nic"].get<std::string>();
    fmt::print("{:>5} {:>5} {:>7} {:>9} {:>10} {:>5} {:>4} {:>8}\n", r["rank"].get<int>(),
               t["node_id"].get<int>(),
               fmt::format("{}/{}", t["local_rank"].get<int>(), t["local_size"].get<int>()),
               t["bound_by"].get<std::string>(), t["binding"].get<std::string>(),
               numa < 0 ? std::string("-") : std::to_string(numa), gpu_text,
               nic.empty() ? "-" : nic);
    for (const json &w : t["warnings"])
      fmt::print("      warning: {}\n", w.get<std::string>());
  }

  fmt::print("\nconfiguration{}:\n",
             r0["config_file"].get<std::string>().empty()
                 ? std::string()
                 : fmt::format(" (file {})", r0["config_file"].get<std::string>()));
  // Columns as wide as their longest entry, so every source lines up.
  size_t key_width = 0, value_width = 0;
  std::vector<std::pair<std::string, std::string>> rows;
  for (auto it = r0["config"].begin(); it != r0["config"].end(); ++it) {
    const json &v = (*it)["value"];
    rows.emplace_back(it.key(), v.is_string() ? v.get<std::string>() : v.dump());
    key_width = std::max(key_width, it.key().size());
    value_width = std::max(value_width, rows.back().second.size());
  }
  size_t i = 0;
  for (auto it = r0["config"].begin(); it != r0["config"].end(); ++it, ++i)
    fmt::print("  {:<{}}  {:<{}}  ({})\n", rows[i].first, key_width, rows[i].second, value_width,
               (*it)["source"].get<std::string>());
}

// What zerort does with each of DeepSpeed's keys: acts, accepted only with the values that
// describe what zerort does anyway, accepted only when off, refused; and why.
void print_deepspeed_keys(const json &keys) {
  std::vector<std::string> acts, autos;
  std::vector<const json *> only, disabled, refused;
  for (const json &k : keys) {
    if (!k.value("deepspeed", false)) continue;
    const std::string use = k.value("use", "acts");
    if (use == "acts") acts.push_back(k["name"].get<std::string>());
    if (use == "only") only.push_back(&k);
    if (use == "disabled") disabled.push_back(&k);
    if (use == "refused") refused.push_back(&k);
    if (k.contains("auto")) autos.push_back(k["name"].get<std::string>());
  }
  auto reasons = [](const char *title, const std::vector<const json *> &list) {
    fmt::print("  {} ({}):\n", title, list.size());
    for (const json *k : list) {
      std::string values;
      if (k->contains("only"))
        values =
            fmt::format(" {}", fmt::join((*k)["only"].get<std::vector<std::string>>(), " or "));
      fmt::print("    {}{}: {}\n", (*k)["name"].get<std::string>(), values,
                 (*k)["doc"].get<std::string>());
    }
  };
  fmt::print(
      "\nDeepSpeed's keys (ds_config.json): none is accepted and ignored; each acts, is "
      "accepted only with the values that describe what zerort does anyway, or is refused "
      "with its reason\n");
  fmt::print("  act ({}): {}\n", acts.size(), fmt::join(acts, ", "));
  reasons("accepted only with these values", only);
  reasons("accepted only when off", disabled);
  reasons("refused", refused);
  fmt::print("  \"auto\" accepted (the program fills it; see each key): {}\n",
             fmt::join(autos, ", "));
}

int print_config_keys(bool as_json) {
  size_t length = 0;
  zrt_config_schema(nullptr, 0, &length);
  std::string text(length + 1, '\0');
  zrt_config_schema(text.data(), text.size(), &length);
  text.resize(length);
  json keys = json::parse(text);
  if (as_json) {
    fmt::print("{}\n", keys.dump(2));
    return 0;
  }
  fmt::print("{:<18} {:<22} {:<8} {:<8} {}\n", "key", "environment", "type", "default", "values");
  for (const json &k : keys) {
    std::string values;
    if (k.contains("choices"))
      values = fmt::format("{}", fmt::join(k["choices"].get<std::vector<std::string>>(), "|"));
    const std::string use = k.value("use", "acts");
    if (use == "only" && k.contains("only"))
      values = fmt::format("only {}", fmt::join(k["only"].get<std::vector<std::string>>(), "|"));
    if (use == "refused") values = "refused";
    if (use == "disabled") values = "only when off";
    fmt::print("{:<18} {:<22} {:<8} {:<8} {}\n", k["name"].get<std::string>(),
               k["env"].get<std::string>(), k["type"].get<std::string>(),
               k["default"].get<std::string>(), values);
    fmt::print("    {}\n", k["doc"].get<std::string>());
    if (k.contains("auto")) fmt::print("    \"auto\": {}\n", k["auto"].get<std::string>());
  }
  print_deepspeed_keys(keys);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"zrt-info: zerort's view of this job: build, configuration, placement"};
  bool as_json = false, selfcheck = false, config_keys = false;
  app.add_flag("--json", as_json, "print JSON instead of a table");
  app.add_flag("--selfcheck", selfcheck, "run every collective against a serial reference");
  app.add_flag("--config-keys", config_keys, "list every configuration key and exit");
  CLI11_PARSE(app, argc, argv);
  if (config_keys) return print_config_keys(as_json);

  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  zrt_context_h ctx = nullptr;
  zrt_status_t st = zrt_init(MPI_COMM_WORLD, nullptr, &ctx);
  if (st != ZRT_SUCCESS) {
    std::fprintf(stderr, "zrt-info: rank %d: %s (%s)\n", rank, zrt_last_error_message(),
                 zrt_status_string(st));
    // A rank that never came (dead before zrt_init): MPI_Finalize would wait for it.
    if (st == ZRT_ERR_TIMEOUT) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Finalize();
    return 1;
  }

  std::vector<std::string> all = gather_strings(describe(ctx), rank, size);
  int failures = 0;
  std::vector<SelfCheckResult> results;
  if (selfcheck) {
    zrt_comm_h comm = nullptr;
    zrt_context_comm(ctx, &comm);
    results = run_selfcheck(comm);
  }

  if (rank == 0) {
    std::vector<json> ranks;
    for (const std::string &s : all)
      ranks.push_back(json::parse(s));
    if (as_json) {
      json out{{"ranks", ranks}};
      if (selfcheck) {
        json checks = json::array();
        for (const auto &r : results)
          checks.push_back({{"op", r.op},
                            {"dtype", r.dtype},
                            {"reduction", r.reduction},
                            {"sizes", r.sizes},
                            {"failures", r.failures},
                            {"error", r.first_error}});
        out["selfcheck"] = checks;
      }
      fmt::print("{}\n", out.dump(2));
    } else {
      print_table(ranks);
    }
  }
  for (const auto &r : results)
    failures += r.failures;
  if (selfcheck && rank == 0 && !as_json) {
    fmt::print("\ncollective self-check on {} ranks (exact comparison with a serial reference):\n",
               size);
    for (const auto &r : results)
      fmt::print(
          "  {:<15} {:<5} {:<4} {} sizes  {}\n", r.op, r.dtype, r.reduction, r.sizes,
          r.failures == 0 ? "ok" : fmt::format("FAILED ({}): {}", r.failures, r.first_error));
    fmt::print("self-check: {}\n", failures == 0 ? "all passed" : "FAILED");
  }

  st = zrt_finalize(ctx);
  if (st != ZRT_SUCCESS)
    std::fprintf(stderr, "zrt-info: zrt_finalize failed: %s\n", zrt_last_error_message());
  MPI_Finalize();
  return failures == 0 && st == ZRT_SUCCESS ? 0 : 1;
}
