#include "runtime/error.hpp"

#include <string_view>

namespace zrt {

namespace {
// Per thread, so concurrent callers never see each other's messages.
thread_local std::string t_last_error;
thread_local const char *t_function = nullptr;
}  // namespace

const char *current_function() noexcept {
  return t_function != nullptr ? t_function : "";
}

FunctionScope::FunctionScope(const char *function) noexcept : outer_(t_function) {
  if (t_function == nullptr) t_function = function;
}

FunctionScope::~FunctionScope() {
  t_function = outer_;
}

std::string with_function(const char *function, const char *message) {
  std::string_view m(message), f(function);
  if (m.size() > f.size() + 1 && m.substr(0, f.size()) == f && m[f.size()] == ':')
    return std::string(m);
  return fmt::format("{}: {}", function, message);
}

void set_last_error(std::string message) noexcept {
  try {
    t_last_error = std::move(message);
  } catch (...) {
    // Out of memory while recording an error: keep the previous message.
  }
}

const char *last_error() noexcept {
  return t_last_error.c_str();
}

}  // namespace zrt

extern "C" {

ZRT_API const char *zrt_status_string(zrt_status_t status) {
  switch (status) {
    case ZRT_SUCCESS:
      return "success";
    case ZRT_IN_PROGRESS:
      return "operation in progress";
    case ZRT_ERR_INVALID_ARGUMENT:
      return "invalid argument";
    case ZRT_ERR_INVALID_HANDLE:
      return "invalid handle";
    case ZRT_ERR_INVALID_STATE:
      return "invalid state";
    case ZRT_ERR_NOT_SUPPORTED:
      return "not supported";
    case ZRT_ERR_OUT_OF_MEMORY:
      return "out of memory";
    case ZRT_ERR_VERSION_MISMATCH:
      return "API version mismatch";
    case ZRT_ERR_CONFIG:
      return "configuration error";
    case ZRT_ERR_MISMATCH:
      return "arguments differ across ranks";
    case ZRT_ERR_MPI:
      return "MPI error";
    case ZRT_ERR_BACKEND:
      return "communication backend error";
    case ZRT_ERR_IO:
      return "I/O error";
    case ZRT_ERR_TIMEOUT:
      return "timed out";
    case ZRT_ERR_REMOTE:
      return "another rank failed";
    case ZRT_ERR_INTERNAL:
      return "internal error";
    default:
      break;
  }
  return "unknown status";
}

ZRT_API const char *zrt_last_error_message(void) {
  return zrt::last_error();
}

ZRT_API zrt_status_t zrt_last_error_set(const char *message) {
  if (message == nullptr) {
    zrt::set_last_error("zrt_last_error_set: message is NULL");
    return ZRT_ERR_INVALID_ARGUMENT;
  }
  zrt::set_last_error(message);
  return ZRT_SUCCESS;
}

}  // extern "C"
