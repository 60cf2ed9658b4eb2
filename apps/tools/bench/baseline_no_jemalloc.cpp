#include <malloc.h>

#include <cstdlib>

#include "baseline_allocators.hpp"

namespace baseline {

void *libc_malloc(size_t bytes) {
  return std::malloc(bytes);
}
void libc_free(void *ptr) {
  std::free(ptr);
}
size_t libc_reserved() {
  struct mallinfo2 m = mallinfo2();
  return m.arena + m.hblkhd;
}

bool have_jemalloc() {
  return false;
}
std::string jemalloc_version() {
  return "";
}
void *je_malloc(size_t bytes) {
  return std::malloc(bytes);
}
void je_free(void *ptr) {
  std::free(ptr);
}
size_t je_reserved() {
  return 0;
}

}  // namespace baseline
