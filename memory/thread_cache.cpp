#include "memory/thread_cache.hpp"

#include <algorithm>

#include "memory/pool.hpp"

namespace zrt {

namespace {

// Every cache of this thread. Its destructor runs at thread exit.
struct OwnedCaches {
  std::vector<ThreadCache *> caches;
  ~OwnedCaches() {
    std::lock_guard registry(thread_cache_registry());
    for (ThreadCache *c : caches) {
      if (Pool *p = c->pool.load(std::memory_order_relaxed)) p->retire(*c);
      delete c;
    }
    caches.clear();
    t_last_thread_cache = {};
  }
};
thread_local OwnedCaches t_owned;

}  // namespace

constinit thread_local LastThreadCache t_last_thread_cache
    __attribute__((tls_model("initial-exec")));

std::mutex &thread_cache_registry() {
  static std::mutex m;
  return m;
}

ThreadCache *find_thread_cache_slow(uint64_t serial) {
  for (ThreadCache *c : t_owned.caches)
    if (c->serial == serial) {
      t_last_thread_cache = {serial, c};
      return c;
    }
  return nullptr;
}

void adopt_thread_cache(ThreadCache *c) {
  auto &list = t_owned.caches;
  // Caches of destroyed pools can never be found again (serials are not reused).
  std::erase_if(list, [](ThreadCache *x) {
    if (x->pool.load(std::memory_order_relaxed) != nullptr) return false;
    delete x;
    return true;
  });
  list.reserve(list.size() + 1);
  list.push_back(c);
  t_last_thread_cache = {c->serial, c};
}

}  // namespace zrt
