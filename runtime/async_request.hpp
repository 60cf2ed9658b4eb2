// The object behind zrt_request_h: an asynchronous operation of any layer, a collective
// (comm/request.hpp) or a background checkpoint save (optim/checkpoint/save_request.hpp).
// One table and one set of entry points (runtime/request_api.cpp: zrt_request_test, wait,
// free) serve them all, so a program has one idiom for everything that runs on.
#pragma once

#include <string>

#include "runtime/handle_table.hpp"
#include "zerort/defs.h"
#include "zerort/status.h"

namespace zrt {

class AsyncRequest {
 public:
  virtual ~AsyncRequest() = default;
  // ZRT_SUCCESS once done, ZRT_IN_PROGRESS before; a failure is thrown as an Error, the
  // same on every later call.
  virtual zrt_status_t test() = 0;
  virtual zrt_status_t wait() = 0;  // never ZRT_IN_PROGRESS
  // Whether it has ended (done or failed), so zrt_request_free may release it.
  virtual bool finished() const = 0;
  // "all-reduce of 1024 fp32 on comm 3": names it in zrt_request_free's refusal.
  virtual std::string describe() const = 0;
  // Called by zrt_request_free just before the object is deleted.
  virtual void freed() {}
};

HandleTable<AsyncRequest> &request_table();
// The object behind handle; Error(ZRT_ERR_INVALID_HANDLE) naming `argument` for a NULL,
// stale or unknown one. Local, thread-safe.
AsyncRequest &request_from(zrt_request_h handle, const char *argument = "request");

}  // namespace zrt
