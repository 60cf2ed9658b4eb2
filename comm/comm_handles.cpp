#include "comm/comm_handles.hpp"

#include "comm/communicator.hpp"
#include "comm/request.hpp"

namespace zrt {

HandleTable<Communicator> &comm_table() {
  static HandleTable<Communicator> table("communicator");
  return table;
}

HandleTable<Request> &request_table() {
  static HandleTable<Request> table("request");
  return table;
}

Communicator &comm_from(zrt_comm_h handle, const char *argument) {
  return comm_table().get(handle_value(handle), argument);
}

Request &request_from(zrt_request_h handle, const char *argument) {
  return request_table().get(handle_value(handle), argument);
}

}  // namespace zrt
