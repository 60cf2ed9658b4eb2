// Errors inside zerort: C++ code throws zrt::Error; every extern "C" entry point runs its
// body through abi_call(), which turns any exception into a status and the calling
// thread's last error message. Nothing else may let an exception reach the C ABI.
#pragma once

#include <fmt/format.h>

#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "zerort/status.h"

namespace zrt {

class Error : public std::runtime_error {
 public:
  Error(zrt_status_t status, std::string message)
      : std::runtime_error(std::move(message)), status_(status) {}
  zrt_status_t status() const noexcept { return status_; }

 private:
  zrt_status_t status_;
};

// Throws Error(status, formatted message).
template <class... Args>
[[noreturn]] void fail(zrt_status_t status, fmt::format_string<Args...> format, Args &&...args) {
  throw Error(status, fmt::format(format, std::forward<Args>(args)...));
}

// Records the calling thread's last error message.
void set_last_error(std::string message) noexcept;
const char *last_error() noexcept;

// The outermost zrt_* function the calling thread is in ("" outside zerort): the watchdog
// names it when an agreement inside it times out.
const char *current_function() noexcept;
class FunctionScope {
 public:
  explicit FunctionScope(const char *function) noexcept;
  ~FunctionScope();
  FunctionScope(const FunctionScope &) = delete;
  FunctionScope &operator=(const FunctionScope &) = delete;

 private:
  const char *outer_;
};

// "function: message", unless the message already begins with "function: ".
std::string with_function(const char *function, const char *message);

// Runs body (returning zrt_status_t) and maps every exception to a status, recording
// "function: message" as the last error. Used by every extern "C" function.
template <class Body>
zrt_status_t abi_call(const char *function, Body &&body) noexcept {
  FunctionScope scope(function);
  try {
    return body();
  } catch (const Error &e) {
    set_last_error(with_function(function, e.what()));
    return e.status();
  } catch (const std::bad_alloc &) {
    set_last_error(fmt::format("{}: out of host memory", function));
    return ZRT_ERR_OUT_OF_MEMORY;
  } catch (const std::exception &e) {
    set_last_error(fmt::format("{}: internal error: {}", function, e.what()));
    return ZRT_ERR_INTERNAL;
  } catch (...) {
    set_last_error(fmt::format("{}: internal error: unknown exception", function));
    return ZRT_ERR_INTERNAL;
  }
}

// Argument checks shared by the entry points.
template <class T>
void require_nonnull(const T *pointer, const char *name) {
  if (pointer == nullptr) fail(ZRT_ERR_INVALID_ARGUMENT, "{} is NULL", name);
}

}  // namespace zrt
