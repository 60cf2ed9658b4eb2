#include "comm/comm_fields.hpp"

namespace zrt {

namespace {

using Params = zrt_comm_params_t;
using Keys = std::map<std::string, std::string>;

const ParamTable<Params, Communicator::Options> kParams{
    "zrt_comm_params_field",
    "params",
    {
        {ZRT_COMM_PARAM_FIELD_BACKEND, "backend", "comm.backend", nullptr,
         [](const Params &p, Keys &, Communicator::Options &o) {
           require_nonnull(p.backend, "params->backend");
           o.backend = p.backend;
         }},
        {ZRT_COMM_PARAM_FIELD_DETERMINISTIC, "deterministic", "comm.deterministic", nullptr,
         [](const Params &p, Keys &, Communicator::Options &o) {
           o.deterministic = p.deterministic != 0;
         }},
        {ZRT_COMM_PARAM_FIELD_TIMEOUT, "timeout", "comm.timeout", nullptr,
         [](const Params &p, Keys &, Communicator::Options &o) {
           if (!(p.timeout >= 0) || p.timeout > 1e9)
             fail(ZRT_ERR_INVALID_ARGUMENT,
                  "params->timeout is {}: accepted values are 0 (no watchdog) to 1e9 seconds",
                  p.timeout);
           o.timeout = p.timeout;
         }},
    }};

}  // namespace

const ParamTable<Params, Communicator::Options> &comm_params_table() {
  return kParams;
}

}  // namespace zrt
