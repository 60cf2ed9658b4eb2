// The handle tables behind zrt_comm_h and zrt_request_h (runtime/handle_table.hpp), and
// the look-ups the entry points use to turn a handle into its object.
#pragma once

#include "runtime/handle_table.hpp"
#include "zerort/defs.h"

namespace zrt {

class Communicator;
class Request;

HandleTable<Communicator> &comm_table();
HandleTable<Request> &request_table();
// The object behind handle; Error(ZRT_ERR_INVALID_HANDLE) naming `argument` for a NULL,
// stale or unknown one. Local, thread-safe.
Communicator &comm_from(zrt_comm_h handle, const char *argument = "comm");
Request &request_from(zrt_request_h handle, const char *argument = "request");

}  // namespace zrt
