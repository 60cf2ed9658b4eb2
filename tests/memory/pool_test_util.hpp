// Helpers shared by the pool tests: pools over real resources, contents that can be
// checked after a buffer moved, and a status + message matcher for zrt::Error.
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "memory/host_resource.hpp"
#include "memory/pool.hpp"
#include "runtime/error.hpp"

namespace pooltest {

// Host memory in the shape of the CUDA resources: one mapping per segment, nothing
// reserved. It lets the pool's segmented arena run where no GPU is.
class SegmentedHostResource : public zrt::Resource {
 public:
  zrt::MemorySpace space() const override { return zrt::MemorySpace::Host; }
  const char *kind() const override { return "mmap segments"; }
  bool host_accessible() const override { return true; }
  size_t granularity() const override { return 4096; }
  bool reserves() const override { return false; }
  void *allocate(size_t bytes) override {
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) zrt::fail(ZRT_ERR_OUT_OF_MEMORY, "mmap of {} bytes failed", bytes);
    return p;
  }
  void deallocate(void *ptr, size_t bytes) noexcept override { munmap(ptr, bytes); }
  void move(void *dst, const void *src, size_t bytes) override { std::memmove(dst, src, bytes); }
};

enum class Arena { Reserving, Segmented };

inline const char *arena_name(Arena arena) {
  return arena == Arena::Reserving ? "Reserving" : "Segmented";
}

inline std::unique_ptr<zrt::Pool> host_pool(size_t limit, size_t segment = size_t{1} << 20,
                                            zrt::CompactPolicy compact = zrt::CompactPolicy::Auto,
                                            size_t alignment = 256,
                                            Arena arena = Arena::Reserving) {
  zrt::PoolOptions o;
  o.name = "test";
  o.limit = limit;
  o.segment_bytes = segment;
  o.alignment = alignment;
  o.compact = compact;
  std::unique_ptr<zrt::Resource> resource;
  if (arena == Arena::Reserving)
    resource = std::make_unique<zrt::HostResource>();
  else
    resource = std::make_unique<SegmentedHostResource>();
  return std::make_unique<zrt::Pool>(std::move(resource), o);
}

// Writes a pattern derived from seed into [p, p+n): every byte for small buffers, the
// first and last 256 bytes and 32 scattered words for large ones (enough to catch a
// move that lost or shifted data, without writing gigabytes in a long trace).
inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

template <class F>
void for_pattern(size_t n, uint64_t seed, F &&f) {
  auto at = [&](size_t i) { f(i, static_cast<unsigned char>(mix(seed * 1315423911u + i))); };
  if (n <= 4096) {
    for (size_t i = 0; i < n; ++i)
      at(i);
    return;
  }
  for (size_t i = 0; i < 256; ++i) {
    at(i);
    at(n - 1 - i);
  }
  for (size_t k = 0; k < 32; ++k)
    at(mix(seed + k) % n);
}

inline void fill(void *p, size_t n, uint64_t seed) {
  auto *b = static_cast<unsigned char *>(p);
  for_pattern(n, seed, [&](size_t i, unsigned char v) { b[i] = v; });
}

inline bool holds(const void *p, size_t n, uint64_t seed) {
  const auto *b = static_cast<const unsigned char *>(p);
  bool ok = true;
  for_pattern(n, seed, [&](size_t i, unsigned char v) { ok = ok && b[i] == v; });
  return ok;
}

// Runs f, which must throw zrt::Error with `status` and a message containing `text`.
template <class F>
::testing::AssertionResult fails_with(F &&f, zrt_status_t status, const std::string &text) {
  try {
    f();
  } catch (const zrt::Error &e) {
    if (e.status() != status)
      return ::testing::AssertionFailure()
             << "status " << e.status() << " instead of " << status << ": " << e.what();
    if (std::string(e.what()).find(text) == std::string::npos)
      return ::testing::AssertionFailure()
             << "message '" << e.what() << "' does not mention '" << text << "'";
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no error (expected '" << text << "')";
}

}  // namespace pooltest
