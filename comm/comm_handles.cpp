#include "comm/comm_handles.hpp"

#include "comm/communicator.hpp"

namespace zrt {

HandleTable<Communicator> &comm_table() {
  static HandleTable<Communicator> table("communicator");
  return table;
}

Communicator &comm_from(zrt_comm_h handle, const char *argument) {
  return comm_table().get(handle_value(handle), argument);
}

}  // namespace zrt
