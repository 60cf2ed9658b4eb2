#include "memory/memory_space.hpp"

#include <fmt/format.h>

#include "runtime/error.hpp"

namespace zrt {

const char *space_name(MemorySpace space) {
  switch (space) {
    case MemorySpace::Host:
      return "host";
    case MemorySpace::PinnedHost:
      return "pinned_host";
    case MemorySpace::Device:
      return "device";
  }
  return "?";
}

const char *lifetime_name(Lifetime lifetime) {
  return lifetime == Lifetime::Long ? "long-lived" : "transient";
}

MemorySpace space_from_c(zrt_memory_space_t space, const char *argument) {
  switch (space) {
    case ZRT_MEMORY_HOST:
      return MemorySpace::Host;
    case ZRT_MEMORY_PINNED_HOST:
      return MemorySpace::PinnedHost;
    case ZRT_MEMORY_DEVICE:
      return MemorySpace::Device;
    default:
      break;
  }
  fail(ZRT_ERR_INVALID_ARGUMENT,
       "{} is {}: accepted values are ZRT_MEMORY_HOST, ZRT_MEMORY_PINNED_HOST, "
       "ZRT_MEMORY_DEVICE",
       argument, static_cast<int>(space));
}

Lifetime lifetime_from_c(zrt_lifetime_t lifetime, const char *argument) {
  switch (lifetime) {
    case ZRT_LIFETIME_LONG:
      return Lifetime::Long;
    case ZRT_LIFETIME_TRANSIENT:
      return Lifetime::Transient;
    default:
      break;
  }
  fail(ZRT_ERR_INVALID_ARGUMENT,
       "{} is {}: accepted values are ZRT_LIFETIME_LONG, ZRT_LIFETIME_TRANSIENT", argument,
       static_cast<int>(lifetime));
}

std::string format_bytes(size_t bytes) {
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
