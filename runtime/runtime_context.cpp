#include "runtime/runtime_context.hpp"

#include <algorithm>
#include <exception>
#include <map>

#include "runtime/agree.hpp"
#include "runtime/build_config.hpp"
#include "runtime/field_table.hpp"
#include "runtime/log.hpp"
#include "runtime/mpi_error.hpp"
#include "runtime/mpi_lifetime.hpp"
#include "runtime/settings_agreement.hpp"
#include "zerort/version.h"

extern char **environ;

namespace zrt {

namespace {

struct PartRegistration {
  int order;
  ContextPartFactory factory;
};

std::vector<PartRegistration> &part_registry() {
  static std::vector<PartRegistration> registry;
  return registry;
}

const char *enum_text(zrt_log_level_t level) {
  return log::level_name(level);
}

const char *enum_text(zrt_bind_t bind) {
  switch (bind) {
    case ZRT_BIND_AUTO:
      return "auto";
    case ZRT_BIND_NONE:
      return "none";
    case ZRT_BIND_CORE:
      return "core";
    default:
      break;
  }
  fail(ZRT_ERR_INVALID_ARGUMENT,
       "params->bind is {}: accepted values are ZRT_BIND_AUTO, "
       "ZRT_BIND_NONE, ZRT_BIND_CORE",
       static_cast<int>(bind));
}

using InitParams = zrt_init_params_t;

std::string log_level_text(const InitParams &p) {
  if (p.log_level < ZRT_LOG_ERROR || p.log_level > ZRT_LOG_TRACE)
    fail(ZRT_ERR_INVALID_ARGUMENT,
         "params->log_level is {}: accepted values are ZRT_LOG_ERROR .. ZRT_LOG_TRACE",
         static_cast<int>(p.log_level));
  return enum_text(p.log_level);
}

const ParamTable<InitParams> kInitParams{
    "zrt_init_params_field",
    "params",
    {
        {ZRT_INIT_PARAM_FIELD_LOG_LEVEL, "log_level", "log_level", log_level_text},
        {ZRT_INIT_PARAM_FIELD_CONFIG_FILE, "config_file", "config_file",
         [](const InitParams &p) {
           require_nonnull(p.config_file, "params->config_file");
           return std::string(p.config_file);
         }},
        {ZRT_INIT_PARAM_FIELD_BIND, "bind", "bind",
         [](const InitParams &p) { return std::string(enum_text(p.bind)); }},
        {ZRT_INIT_PARAM_FIELD_RANKS_PER_NODE, "ranks_per_node", "ranks_per_node",
         number_text<&InitParams::ranks_per_node>},
    }};

// The program's settings from zrt_init_params_t, by configuration key.
std::map<std::string, std::string> params_settings(const zrt_init_params_t *p) {
  std::map<std::string, std::string> out;
  kInitParams.read(p, out);
  return out;
}

zrt_log_level_t parse_level(const std::string &name) {
  for (int l = ZRT_LOG_ERROR; l <= ZRT_LOG_TRACE; ++l)
    if (name == log::level_name(static_cast<zrt_log_level_t>(l)))
      return static_cast<zrt_log_level_t>(l);
  return ZRT_LOG_WARN;
}

}  // namespace

bool register_context_part(int order, ContextPartFactory factory) {
  part_registry().push_back({order, std::move(factory)});
  return true;
}

HandleTable<Context> &context_table() {
  static HandleTable<Context> table("context");
  return table;
}

Context &context_from(zrt_context_h handle, const char *argument) {
  return context_table().get(handle_value(handle), argument);
}

Context::Context(MPI_Comm user_comm, const zrt_init_params_t *params) {
  // Local checks first: they fail the same way on every rank that passes the same values.
  std::map<std::string, std::string> settings = params_settings(params);
  owns_mpi_ = mpi_acquire(&thread_level_);
  try {
    if (user_comm == MPI_COMM_NULL) fail(ZRT_ERR_INVALID_ARGUMENT, "comm is MPI_COMM_NULL");
    int inter = 0;
    check_mpi(MPI_Comm_test_inter(user_comm, &inter), "MPI_Comm_test_inter(comm)");
    if (inter) fail(ZRT_ERR_INVALID_ARGUMENT, "comm is an inter-communicator");
    // The configuration is read here first, alone, for comm.timeout: the meetings below
    // come before any watch, and a rank that died before zrt_init must not hold the
    // others for ever. Whether it is valid everywhere is agreed after the duplicate.
    std::exception_ptr config_error;
    try {
      config_ = Config::resolve(ConfigSchema::library(), "", settings, environ);
    } catch (const Error &) {
      config_error = std::current_exception();
    }
    // A rank whose configuration failed fails the agreement below; until then it waits
    // as long as the default lets it.
    SetupDeadline deadline(
        config_error ? std::stod(ConfigSchema::library().find("comm.timeout")->default_value)
                     : config_.get_double("comm.timeout"));
    comm_ = MpiComm::dup(user_comm, "MPI_Comm_dup(comm) in zrt_init");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    log::set_rank(rank_, size_);

    // A configuration error on one rank (say, a file only some nodes see) fails all.
    run_agreed(comm_, [&] {
      if (config_error) std::rethrow_exception(config_error);
    });
    // From here on every agreement on comm_ has comm.timeout as its deadline.
    comm_watch_ =
        std::make_unique<AgreementWatch>(comm_, config_.get_double("comm.timeout"), breakage_);
    // Before anything acts on them: ranks with different backends would hang in set-up.
    check_same_settings(comm_, config_.agreed_settings(), "zerort's settings");
    log_level_ = parse_level(config_.get_string("log_level"));
    log::set_level(log_level_);

    NodeLayout layout;
    run_agreed(comm_, [&] {
      layout = split_nodes(comm_, static_cast<int>(config_.get_int("ranks_per_node")), &node_comm_);
    });
    topology_ = std::make_unique<Topology>(layout, config_.get_string("bind"));

    std::vector<PartRegistration> registry = part_registry();
    std::stable_sort(registry.begin(), registry.end(),
                     [](const auto &a, const auto &b) { return a.order < b.order; });
    for (const PartRegistration &r : registry) {
      std::unique_ptr<ContextPart> part;
      run_agreed(comm_, [&] { part = r.factory(*this); });
      parts_.push_back(std::move(part));
    }
    log::info("initialized: {} ranks on {} nodes, local rank {}/{}, binding {}", size_,
              layout.node_count, layout.local_rank, layout.local_size, topology_->binding());
  } catch (const Error &e) {
    release(e.status() == ZRT_ERR_TIMEOUT);
    throw;
  } catch (...) {
    release(false);
    throw;
  }
}

void Context::release(bool timed_out) noexcept {
  while (!parts_.empty())
    parts_.pop_back();  // reverse order of creation
  topology_.reset();
  // After an agreement or a meeting of the set-up timed out, MPI may still run it on
  // comm_: give comm_ up (MPI_Finalize reclaims it) rather than free it under a pending
  // operation.
  const bool keep =
      timed_out || breakage_->broken() || (comm_watch_ && !comm_watch_->failure().empty());
  comm_watch_.reset();
  if (keep) {
    node_comm_.abandon();
    comm_.abandon();
  }
  node_comm_.reset();
  comm_.reset();  // before MPI may be finalized
  // MPI_Finalize waits for every process of the job: one that is stopped, hung or never
  // came would hold this one for ever. It is left to MPI_Abort (or the process's exit,
  // which the launcher takes as a failed job).
  if (keep && owns_mpi_) {
    log::error(
        "MPI_Finalize not called: the ranks are out of step ({}); end the job with "
        "MPI_Abort",
        breakage_->broken() ? breakage_->why() : std::string("a meeting of zrt_init timed out"));
    mpi_abandon();
  } else {
    mpi_release(owns_mpi_);
  }
}

Context::~Context() {
  release(false);
}

void Context::check_can_finalize() const {
  for (const auto &p : parts_)
    p->check_can_finalize();
}

nlohmann::json Context::describe() const {
  char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int length = 0;
  MPI_Get_library_version(mpi_version, &length);
  std::string mpi(mpi_version, static_cast<size_t>(length));
  if (auto cut = mpi.find_first_of(",\r\n"); cut != std::string::npos) mpi.resize(cut);
  const char *levels[] = {"MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED",
                          "MPI_THREAD_MULTIPLE"};
  nlohmann::json out{
      {"version", ZRT_VERSION_STRING},
      {"api_version", fmt::format("{}.{}", ZRT_API_VERSION_MAJOR, ZRT_API_VERSION_MINOR)},
      {"build",
       {{"type", build::kBuildType},
        {"compiler", build::kCompiler},
        {"cuda", build::kHaveCuda},
        {"nccl", build::kHaveNccl},
        {"ucx", build::kHaveUcx},
        {"hdf5", build::kHaveHdf5},
        {"sanitizers", build::kSanitize}}},
      {"mpi",
       {{"library", mpi},
        {"thread_level", levels[std::clamp(thread_level_, 0, 3)]},
        {"initialized_by_zerort", owns_mpi_}}},
      {"rank", rank_},
      {"size", size_},
      {"config", config_.to_json()},
      {"config_file", config_.file_path()},
      {"topology", topology_->to_json()},
  };
  for (const auto &p : parts_)
    p->describe(out);
  return out;
}

}  // namespace zrt
