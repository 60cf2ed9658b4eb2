#include "alloc_floor.hpp"

#include <cstdlib>

namespace bench {
namespace {

struct Stack {
  static constexpr int kDepth = 64;
  size_t size = 0;
  int count = 0;
  void *blocks[kDepth];
};
thread_local Stack t_stack;

[[gnu::noinline]] void *stack_alloc(size_t bytes) {
  Stack &s = t_stack;
  if (s.count > 0 && s.size == bytes) return s.blocks[--s.count];
  return std::malloc(bytes);
}

[[gnu::noinline]] void stack_free(void *ptr, size_t bytes) {
  Stack &s = t_stack;
  if (s.count < Stack::kDepth && (s.count == 0 || s.size == bytes)) {
    s.size = bytes;
    s.blocks[s.count++] = ptr;
    return;
  }
  std::free(ptr);
}

}  // namespace

void *(*const volatile floor_alloc)(size_t) = stack_alloc;
void (*const volatile floor_free)(void *, size_t) = stack_free;

void floor_release_all() {
  Stack &s = t_stack;
  while (s.count > 0)
    std::free(s.blocks[--s.count]);
}

}  // namespace bench
