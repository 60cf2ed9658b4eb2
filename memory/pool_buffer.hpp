// Owning handles for the layers above (the ZeRO engine): an allocation is freed when its
// owner goes out of scope, on every path, including the error paths of a collective
// setup that throws halfway.
//
//   Pool &host = context.part<MemoryPart>().pool(MemorySpace::Host);
//   PoolAllocation flat = PoolAllocation::allocate(host, bytes, Lifetime::Long);    // fixed
//   PoolBuffer state = PoolBuffer::allocate(host, bytes, Lifetime::Long);           // movable
//   float *m = state.as<float>();          // valid until host.generation() changes
//   { PoolBuffer::Lock held = state.lock(); post_async(held.as<float>()); ... }  // pinned in place
#pragma once

#include <utility>

#include "memory/pool.hpp"
#include "runtime/log.hpp"

namespace zrt {

// An immovable allocation: the pointer is stable for the object's life.
class PoolAllocation {
 public:
  PoolAllocation() = default;
  static PoolAllocation allocate(Pool &pool, size_t bytes, Lifetime lifetime) {
    PoolAllocation a;
    a.ptr_ = pool.allocate(bytes, lifetime);
    a.pool_ = &pool;
    a.bytes_ = bytes;
    return a;
  }
  ~PoolAllocation() { reset(); }
  PoolAllocation(PoolAllocation &&o) noexcept
      : pool_(std::exchange(o.pool_, nullptr)),
        ptr_(std::exchange(o.ptr_, nullptr)),
        bytes_(std::exchange(o.bytes_, 0)) {}
  PoolAllocation &operator=(PoolAllocation &&o) noexcept {
    if (this != &o) {
      reset();
      pool_ = std::exchange(o.pool_, nullptr);
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  PoolAllocation(const PoolAllocation &) = delete;
  PoolAllocation &operator=(const PoolAllocation &) = delete;

  void *data() const { return ptr_; }
  template <class T>
  T *as() const {
    return static_cast<T *>(ptr_);
  }
  size_t size() const { return bytes_; }
  explicit operator bool() const { return ptr_ != nullptr; }

  void reset() noexcept {
    if (ptr_ == nullptr) return;
    try {
      pool_->free(ptr_);
    } catch (const std::exception &e) {
      log::error("freeing a pool allocation failed: {}", e.what());
    }
    ptr_ = nullptr;
    pool_ = nullptr;
    bytes_ = 0;
  }

 private:
  Pool *pool_ = nullptr;
  void *ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A movable buffer: the pool may move it when it compacts, so read its address when
// you use it (data() is cheap) and lock it across asynchronous use.
class PoolBuffer {
 public:
  PoolBuffer() = default;
  static PoolBuffer allocate(Pool &pool, size_t bytes, Lifetime lifetime) {
    PoolBuffer b;
    b.id_ = pool.allocate_movable(bytes, lifetime);
    b.pool_ = &pool;
    b.bytes_ = bytes;
    return b;
  }
  ~PoolBuffer() { reset(); }
  PoolBuffer(PoolBuffer &&o) noexcept
      : pool_(std::exchange(o.pool_, nullptr)),
        id_(std::exchange(o.id_, BufferId{})),
        bytes_(std::exchange(o.bytes_, 0)) {}
  PoolBuffer &operator=(PoolBuffer &&o) noexcept {
    if (this != &o) {
      reset();
      pool_ = std::exchange(o.pool_, nullptr);
      id_ = std::exchange(o.id_, BufferId{});
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  PoolBuffer(const PoolBuffer &) = delete;
  PoolBuffer &operator=(const PoolBuffer &) = delete;

  // The current address: valid until the pool's generation changes.
  void *data() const { return pool_->pointer(id_); }
  template <class T>
  T *as() const {
    return static_cast<T *>(data());
  }
  size_t size() const { return bytes_; }
  BufferId id() const { return id_; }
  Pool &pool() const { return *pool_; }
  explicit operator bool() const { return static_cast<bool>(id_); }

  // Keeps the buffer in place while it lives (nests with other locks).
  class Lock {
   public:
    explicit Lock(const PoolBuffer &b) : pool_(b.pool_), id_(b.id_), ptr_(pool_->lock(id_)) {}
    ~Lock() {
      try {
        pool_->unlock(id_);
      } catch (const std::exception &e) {
        log::error("unlocking a pool buffer failed: {}", e.what());
      }
    }
    Lock(const Lock &) = delete;
    Lock &operator=(const Lock &) = delete;
    void *data() const { return ptr_; }
    template <class T>
    T *as() const {
      return static_cast<T *>(ptr_);
    }

   private:
    Pool *pool_;
    BufferId id_;
    void *ptr_;
  };
  Lock lock() const { return Lock(*this); }

  void reset() noexcept {
    if (!id_) return;
    try {
      pool_->free(id_);
    } catch (const std::exception &e) {
      log::error("freeing a pool buffer failed: {}", e.what());
    }
    id_ = BufferId{};
    pool_ = nullptr;
    bytes_ = 0;
  }

 private:
  Pool *pool_ = nullptr;
  BufferId id_;
  size_t bytes_ = 0;
};

}  // namespace zrt
