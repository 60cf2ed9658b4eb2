// Rank-prefixed logging to stderr: "[zerort 1/4 warn] message". One write(2) per line so
// lines from different ranks and threads do not interleave mid-line.
#pragma once

#include <fmt/format.h>

#include <string_view>

#include "zerort/context.h"

namespace zrt::log {

using Level = zrt_log_level_t;

void set_level(Level level) noexcept;
Level level() noexcept;
void set_rank(int rank, int size) noexcept;
bool enabled(Level level) noexcept;
void write(Level level, std::string_view message) noexcept;
const char *level_name(Level level) noexcept;

template <class... Args>
void message(Level lvl, fmt::format_string<Args...> format, Args &&...args) noexcept {
  if (!enabled(lvl)) return;
  try {
    write(lvl, fmt::format(format, std::forward<Args>(args)...));
  } catch (...) {
    // Logging must never throw into the caller.
  }
}

template <class... Args>
void error(fmt::format_string<Args...> f, Args &&...a) noexcept {
  message(ZRT_LOG_ERROR, f, std::forward<Args>(a)...);
}
template <class... Args>
void warn(fmt::format_string<Args...> f, Args &&...a) noexcept {
  message(ZRT_LOG_WARN, f, std::forward<Args>(a)...);
}
template <class... Args>
void info(fmt::format_string<Args...> f, Args &&...a) noexcept {
  message(ZRT_LOG_INFO, f, std::forward<Args>(a)...);
}
template <class... Args>
void debug(fmt::format_string<Args...> f, Args &&...a) noexcept {
  message(ZRT_LOG_DEBUG, f, std::forward<Args>(a)...);
}
template <class... Args>
void trace(fmt::format_string<Args...> f, Args &&...a) noexcept {
  message(ZRT_LOG_TRACE, f, std::forward<Args>(a)...);
}

}  // namespace zrt::log
