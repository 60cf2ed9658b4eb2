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

}  // namespace zrt
