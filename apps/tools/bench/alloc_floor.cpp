#include "alloc_floor.hpp"

#include <vector>

#include "baseline_allocators.hpp"

namespace bench {
namespace {

struct Stack {
  size_t size = 0;
  size_t count = 0;
  std::vector<void *> blocks;  // capacity: floor_prepare's depth
};
thread_local Stack t_stack;

[[gnu::noinline]] void *stack_alloc(size_t bytes) {
  Stack &s = t_stack;
  if (s.count > 0 && s.size == bytes) return s.blocks[--s.count];
  return baseline::libc_malloc(bytes);
}

[[gnu::noinline]] void stack_free(void *ptr, size_t bytes) {
  Stack &s = t_stack;
  if (s.count < s.blocks.size() && (s.count == 0 || s.size == bytes)) {
    s.size = bytes;
    s.blocks[s.count++] = ptr;
    return;
  }
  baseline::libc_free(ptr);
}

}  // namespace

void *(*const volatile floor_alloc)(size_t) = stack_alloc;
void (*const volatile floor_free)(void *, size_t) = stack_free;

void floor_prepare(size_t depth) {
  floor_release_all();
  t_stack.blocks.assign(depth, nullptr);
}

void floor_release_all() {
  Stack &s = t_stack;
  while (s.count > 0)
    baseline::libc_free(s.blocks[--s.count]);
}

}  // namespace bench
