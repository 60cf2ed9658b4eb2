#include "memory/resource.hpp"

#include "runtime/error.hpp"

namespace zrt {

nlohmann::json Resource::describe() const {
  return {{"space", space_name(space())},
          {"kind", kind()},
          {"page_locked", page_locked()},
          {"numa_node", numa_node()},
          {"warnings", warnings()}};
}

void *Resource::unsupported(const char *what, size_t bytes) {
  fail(ZRT_ERR_INTERNAL, "{} resource cannot {} {} bytes", kind(), what, bytes);
}

}  // namespace zrt
