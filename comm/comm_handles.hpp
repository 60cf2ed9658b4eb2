// The handle table behind zrt_comm_h (runtime/handle_table.hpp), and the look-up the entry
// points use to turn a handle into its object. A collective's zrt_request_h is in the
// table of every layer's requests (runtime/async_request.hpp).
#pragma once

#include "runtime/handle_table.hpp"
#include "zerort/defs.h"

namespace zrt {

class Communicator;

HandleTable<Communicator> &comm_table();
// The object behind handle; Error(ZRT_ERR_INVALID_HANDLE) naming `argument` for a NULL,
// stale or unknown one. Local, thread-safe.
Communicator &comm_from(zrt_comm_h handle, const char *argument = "comm");

}  // namespace zrt
