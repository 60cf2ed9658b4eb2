// The pool's side of its thread caches (thread_cache.hpp): lending blocks, taking them
// back, frees from other threads, flushes and thread exit.
#include "memory/address_map.hpp"
#include "memory/poison.hpp"
#include "memory/pool.hpp"
#include "runtime/error.hpp"

namespace zrt {

namespace {

size_t relaxed(const std::atomic<size_t> &v) {
  return v.load(std::memory_order_relaxed);
}

}  // namespace

ThreadCache *Pool::make_my_cache() {
  ThreadCache::Limits limits{.handle = handle_.load(std::memory_order_relaxed),
                             .max_block = cache_max_,
                             .budget = options_.thread_cache_bytes,
                             .align_shift = align_shift_,
                             .host_accessible = host_accessible_,
                             .pool_live = &live_};
  auto c = std::make_unique<ThreadCache>(this, serial_, limits);
  std::lock_guard registry(thread_cache_registry());
  std::lock_guard lock(mutex_);
  caches_.reserve(caches_.size() + 1);
  adopt_thread_cache(c.get());  // cannot fail after this
  caches_.push_back(c.get());
  return c.release();
}

inline void *Pool::allocate_cached(ThreadCache &c, size_t bytes, Lifetime lifetime) {
  if (c.attention.load(std::memory_order_acquire)) service(c);
  if (void *p = c.take_idle(bytes, lifetime)) return p;
  std::lock_guard lock(mutex_);
  c.lent.prepare_insert();  // the one step that can fail, before anything changes
  Block *b = allocate_block(bytes, lifetime, BlockState::Lent);
  b->owner = &c;
  ThreadCache::set_mark(b, ThreadCache::kLive);
  c.lent.insert(b->addr, {b, static_cast<uint32_t>(QuickCache::index(b->size, b->lifetime))});
  return reinterpret_cast<void *>(b->addr);
}

inline bool Pool::free_cached(ThreadCache &c, uintptr_t p) {
  if (c.attention.load(std::memory_order_acquire)) service(c);
  Block *b = c.lent.find(p).block;
  if (b == nullptr) return false;
  if (ThreadCache::mark(b) != ThreadCache::kLive)
    fail(ZRT_ERR_INVALID_ARGUMENT,
         "ptr {} is not allocated: it lies in free memory of pool '{}' (freed twice?)",
         reinterpret_cast<const void *>(p), options_.name);
  if (b->size > cache_max_) {
    std::lock_guard lock(mutex_);
    give_back_locked(c, b);
    return true;
  }
  // Over budget: the idle blocks are a working set the program has moved away from; they
  // all go back, so the cache follows the sizes in use now.
  bool over = relaxed(c.idle_bytes) + b->size > options_.thread_cache_bytes;
  // A class that is full grows (without the lock: its storage is the thread's own), so
  // that as many blocks of one size stay cached as the program keeps live at once.
  if (!over && (c.idle.put_if_room(b) ||
                (c.idle.can_grow(b) && c.idle.grow(QuickCache::index(b->size, b->lifetime)) &&
                 c.idle.put_if_room(b)))) {
    c.mark_idle(b);
    return true;
  }
  std::lock_guard lock(mutex_);
  bool kept = false;
  if (over) {
    flush_locked(c);
    kept = c.idle.put(b, [](Block *) {});  // the cache is empty: this always fits
  } else {
    // The slot holds another class, which hands it over, or b's class is as deep as it goes.
    kept = c.idle.put(b, [&](Block *old) {
      c.sub_idle(old->size);
      give_back_locked(c, old);
    });
  }
  if (kept)
    c.mark_idle(b);
  else
    give_back_locked(c, b);
  return true;
}

// The entry points live here, beside their fast paths, so that those inline.
void *Pool::allocate(size_t bytes, Lifetime lifetime) {
  if (bytes - 1 < cache_max_) {  // bytes in [1, cache_max_]
    ThreadCache *c = my_cache();
    if (c == nullptr) c = make_my_cache();
    return allocate_cached(*c, bytes, lifetime);
  }
  std::lock_guard lock(mutex_);
  return reinterpret_cast<void *>(allocate_block(bytes, lifetime, BlockState::Raw)->addr);
}

void Pool::free(void *ptr) {
  if (ptr == nullptr) fail(ZRT_ERR_INVALID_ARGUMENT, "ptr is NULL");
  auto p = reinterpret_cast<uintptr_t>(ptr);
  if (cache_max_ != 0)
    if (ThreadCache *c = my_cache(); c != nullptr && (c->try_free(ptr) || free_cached(*c, p)))
      return;
  std::lock_guard lock(mutex_);
  Block *b = addresses_.find(p);
  if (b == nullptr || b->state == BlockState::Cached) bad_free(p);
  if (b->state == BlockState::Lent) return remote_free_locked(b);
  if (b->state == BlockState::Movable)
    fail(ZRT_ERR_INVALID_ARGUMENT,
         "ptr {} is the address of a movable buffer of pool '{}': free it by its handle "
         "(zrt_pool_free_movable)",
         ptr, options_.name);
  free_block(b);
}

void Pool::give_back_locked(ThreadCache &c, Block *b) {
  c.lent.erase(b->addr);
  b->owner = nullptr;
  ThreadCache::set_mark(b, 0);
  b->state = BlockState::Raw;
  free_block(b);
}

void Pool::remote_free_locked(Block *b) {
  if (ThreadCache::mark(b) != ThreadCache::kLive)
    fail(ZRT_ERR_INVALID_ARGUMENT,
         "ptr {} is not allocated: it lies in free memory of pool '{}' (freed twice?)",
         reinterpret_cast<const void *>(b->addr), options_.name);
  ThreadCache &c = *b->owner;
  c.remote.push_back(b);  // may fail: before the block changes
  ThreadCache::set_mark(b, ThreadCache::kRemoteFreed);
  c.attention.store(true, std::memory_order_release);
}

void Pool::service(ThreadCache &c) {
  std::lock_guard lock(mutex_);
  service_locked(c);
}

void Pool::service_locked(ThreadCache &c) {
  for (Block *b : c.remote)
    give_back_locked(c, b);
  c.remote.clear();
  if (c.flush_requested) {
    flush_locked(c);
    c.flush_requested = false;
  }
  c.attention.store(false, std::memory_order_relaxed);
}

void Pool::flush_locked(ThreadCache &c) {
  size_t bytes = 0;
  c.idle.drain([&](Block *b) {
    bytes += b->size;
    give_back_locked(c, b);
  });
  c.sub_idle(bytes);
}

void Pool::flush_mine_locked() {
  if (ThreadCache *c = my_cache()) {
    service_locked(*c);
    flush_locked(*c);
  }
  // Other threads' caches cannot be touched from here: they drain at their next call.
  for (ThreadCache *c : caches_)
    if (relaxed(c->idle_bytes) > 0 && c != my_cache()) {
      c->flush_requested = true;
      c->attention.store(true, std::memory_order_release);
    }
}

size_t Pool::thread_idle_bytes() const {
  size_t bytes = 0;
  for (const ThreadCache *c : caches_)
    bytes += relaxed(c->idle_bytes);
  return bytes;
}

size_t Pool::thread_peak_live() const {
  size_t peak = peak_live_;
  for (const ThreadCache *c : caches_)
    peak = std::max(peak, relaxed(c->peak_live));
  return peak;
}

void Pool::note_live() {
  peak_live_ = std::max(peak_live_, live_ - thread_idle_bytes());
}

void Pool::retire(ThreadCache &c) {
  std::lock_guard lock(mutex_);
  service_locked(c);
  flush_locked(c);
  // What the thread still has allocated stays allocated, free-able by any thread.
  c.lent.for_each([](ThreadCache::LentBlock l) {
    Block *b = l.block;
    b->owner = nullptr;
    ThreadCache::set_mark(b, 0);
    b->state = BlockState::Raw;
  });
  peak_live_ = std::max(peak_live_, relaxed(c.peak_live));
  std::erase(caches_, &c);
  c.pool.store(nullptr, std::memory_order_relaxed);
}

}  // namespace zrt
