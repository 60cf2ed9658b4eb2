#include "runtime/gpu/emulated_ranges.hpp"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <vector>

namespace zrt {

namespace {

struct Range {
  uintptr_t base, end;
};

std::shared_mutex &lock() {
  static std::shared_mutex m;
  return m;
}

std::vector<Range> &ranges() {
  static std::vector<Range> r;
  return r;
}

}  // namespace

void add_emulated_device_range(const void *base, size_t bytes) noexcept {
  auto b = reinterpret_cast<uintptr_t>(base);
  std::unique_lock guard(lock());
  try {
    ranges().push_back({b, b + bytes});
  } catch (...) {
    // Out of memory for 16 bytes: the range reads as host memory, which the backends
    // then refuse or serve as host memory; nothing worse.
  }
}

void remove_emulated_device_range(const void *base) noexcept {
  auto b = reinterpret_cast<uintptr_t>(base);
  std::unique_lock guard(lock());
  std::erase_if(ranges(), [&](const Range &r) { return r.base == b; });
}

bool in_emulated_device_range(const void *pointer) noexcept {
  auto p = reinterpret_cast<uintptr_t>(pointer);
  std::shared_lock guard(lock());
  return std::any_of(ranges().begin(), ranges().end(),
                     [&](const Range &r) { return p >= r.base && p < r.end; });
}

}  // namespace zrt
