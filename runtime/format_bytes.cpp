#include "runtime/format_bytes.hpp"

#include <fmt/format.h>

namespace zrt {

std::string format_bytes(uint64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  // Three significant digits, never in exponent form ("1020 KiB", not "1.02e+03 KiB").
  if (v >= 100) return fmt::format("{:.0f} {}", v, units[u]);
  return fmt::format("{:.3g} {}", v, units[u]);
}

}  // namespace zrt
