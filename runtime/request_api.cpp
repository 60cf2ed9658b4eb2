// The C entry points of zerort/request.h, for the requests of every layer.
#include "runtime/async_request.hpp"
#include "runtime/error.hpp"
#include "zerort/request.h"

namespace zrt {

HandleTable<AsyncRequest> &request_table() {
  static HandleTable<AsyncRequest> table("request");
  return table;
}

AsyncRequest &request_from(zrt_request_h handle, const char *argument) {
  return request_table().get(handle_value(handle), argument);
}

}  // namespace zrt

using namespace zrt;

extern "C" {

ZRT_API zrt_status_t zrt_request_test(zrt_request_h request) {
  return abi_call("zrt_request_test", [&] { return request_from(request).test(); });
}

ZRT_API zrt_status_t zrt_request_wait(zrt_request_h request) {
  return abi_call("zrt_request_wait", [&] { return request_from(request).wait(); });
}

ZRT_API zrt_status_t zrt_request_free(zrt_request_h request) {
  return abi_call("zrt_request_free", [&] {
    AsyncRequest &r = request_from(request);
    if (!r.finished())
      fail(ZRT_ERR_INVALID_STATE, "{} is still in progress; wait for it before freeing it",
           r.describe());
    r.freed();
    request_table().remove(handle_value(request), "request");
    return ZRT_SUCCESS;
  });
}

}  // extern "C"
