#include <jemalloc/jemalloc.h>
#include <malloc.h>

#include <cstdint>

#include "baseline_allocators.hpp"

extern "C" void *__libc_malloc(size_t);
extern "C" void __libc_free(void *);

namespace baseline {

void *libc_malloc(size_t bytes) {
  return __libc_malloc(bytes);
}
void libc_free(void *ptr) {
  __libc_free(ptr);
}
size_t libc_reserved() {
  // glibc's own statistics, which cover only what __libc_malloc handed out here.
  struct mallinfo2 m = mallinfo2();
  return m.arena + m.hblkhd;
}

bool have_jemalloc() {
  return true;
}
std::string jemalloc_version() {
  const char *v = nullptr;
  size_t n = sizeof v;
  return mallctl("version", &v, &n, nullptr, 0) == 0 && v != nullptr ? v : "unknown";
}
void *je_malloc(size_t bytes) {
  return mallocx(bytes, 0);
}
void je_free(void *ptr) {
  dallocx(ptr, 0);
}
size_t je_reserved() {
  uint64_t epoch = 1;
  size_t n = sizeof epoch;
  mallctl("epoch", &epoch, &n, &epoch, n);  // refresh the statistics
  size_t mapped = 0;
  n = sizeof mapped;
  return mallctl("stats.mapped", &mapped, &n, nullptr, 0) == 0 ? mapped : 0;
}

}  // namespace baseline
