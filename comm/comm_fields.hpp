// The field table of comm.h's zrt_comm_params_t (runtime/field_table.hpp).
#pragma once

#include "comm/communicator.hpp"
#include "runtime/field_table.hpp"
#include "zerort/comm.h"

namespace zrt {

// Target: the options start as the context's configuration.
const ParamTable<zrt_comm_params_t, Communicator::Options> &comm_params_table();

}  // namespace zrt
