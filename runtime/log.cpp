#include "runtime/log.hpp"

#include <unistd.h>

#include <atomic>
#include <string>

namespace zrt::log {

namespace {
std::atomic<int> g_level{ZRT_LOG_WARN};
std::atomic<int> g_rank{-1};
std::atomic<int> g_size{-1};
}  // namespace

void set_level(Level lvl) noexcept {
  g_level.store(lvl, std::memory_order_relaxed);
}
Level level() noexcept {
  return static_cast<Level>(g_level.load(std::memory_order_relaxed));
}
void set_rank(int rank, int size) noexcept {
  g_rank.store(rank, std::memory_order_relaxed);
  g_size.store(size, std::memory_order_relaxed);
}
bool enabled(Level lvl) noexcept {
  return lvl <= g_level.load(std::memory_order_relaxed);
}

const char *level_name(Level lvl) noexcept {
  switch (lvl) {
    case ZRT_LOG_ERROR:
      return "error";
    case ZRT_LOG_WARN:
      return "warn";
    case ZRT_LOG_INFO:
      return "info";
    case ZRT_LOG_DEBUG:
      return "debug";
    case ZRT_LOG_TRACE:
      return "trace";
    default:
      break;
  }
  return "?";
}

void write(Level lvl, std::string_view text) noexcept {
  try {
    int rank = g_rank.load(std::memory_order_relaxed);
    std::string line = rank < 0 ? fmt::format("[zerort {}] {}\n", level_name(lvl), text)
                                : fmt::format("[zerort {}/{} {}] {}\n", rank, g_size.load(),
                                              level_name(lvl), text);
    const char *p = line.data();
    size_t left = line.size();
    while (left > 0) {
      ssize_t n = ::write(STDERR_FILENO, p, left);
      if (n <= 0) break;
      p += n;
      left -= static_cast<size_t>(n);
    }
  } catch (...) {
  }
}

}  // namespace zrt::log
