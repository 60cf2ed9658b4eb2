/**
 * @file zerort/zerort.hpp
 * @brief C++20 interface over the C ABI, header-only: owners that release what they hold
 * (context, comm, request, pool, pool_block, pool_buffer, offload, offload_token, engine,
 * checkpoint_file, plan), errors as zrt::error (the status and the message), std::span
 * views of parameter, gradient and buffer memory. Everything here is inline over zerort.h:
 * the library exports no C++ symbol, so a program may use another C++ compiler or standard
 * library than zerort was built with. It covers every function of the C API but the
 * Fortran entry points, the deprecated API 2 names and zrt_init_versioned (which
 * zrt_init, and so zrt::context, calls); the test cxx_coverage checks it, and
 * docs/cxx-reference.md lists every member with the C function it calls.
 *
 * Names: a C function zrt_<object>_<verb> is
 *  - <object>::<verb> when this header has a class for the object: zrt_engine_step is
 *    engine::step, zrt_pool_stats pool::stats, zrt_checkpoint_read checkpoint_file::read
 *    (the class of zrt_checkpoint_h is checkpoint_file, apart from engine's checkpoints);
 *  - <class>::<object>_<verb> when its first argument is the handle of another class: the
 *    C name less zrt_. zrt_param_set(engine, ...) is engine::param_set,
 *    zrt_checkpoint_save(engine, ...) engine::checkpoint_save, zrt_context_pool(context)
 *    context::pool (for the context, <object>_ is dropped as for its own class),
 *    zrt_optimizer_adam(context, ...) context::optimizer_adam;
 *  - zrt::<object>_<verb> (the C name less zrt_) when it takes no handle:
 *    zrt::status_string, zrt::shard_range, zrt::checkpoint_describe;
 *  - a constructor, or a static create where a class also views handles it does not own
 *    (comm::create, pool::create, offload::create), for zrt_<object>_create and zrt_init;
 *    checkpoint_file::open and ::create; the destructor and destroy() (or finalize(),
 *    close()) for the call that releases it.
 * Outputs come back by value: report structs with their field_mask set to *_FIELD_ALL,
 * strings as std::string, buffers as std::span or std::vector. Names of before this scheme
 * (engine::set, register_param, save...; context::world) are kept one version, deprecated:
 * the warning names the new member.
 *
 * Owners are move-only. A destructor never throws: it releases what it holds and drops
 * the status (call the explicit member, e.g. request::wait or engine::destroy, to see it).
 * The collective rules of the C functions hold for the members that call them; in
 * particular destroying a context, engine or communicator is collective.
 */
#pragma once

// zerort needs MPI's C API only: keep Open MPI's and MPICH's deprecated C++ bindings out
// (they would need libmpi_cxx at link time).
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <zerort/zerort.h>
#if __has_include(<zerort/model.h>)
#include <zerort/model.h>
#endif

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace zrt {

/** A failed zerort call: status() is the C status, what() the library's message. */
class error : public std::runtime_error {
 public:
  error(zrt_status_t status, const std::string &message)
      : std::runtime_error(message), status_(status) {}
  zrt_status_t status() const noexcept { return status_; }

 private:
  zrt_status_t status_;
};

/** A short, static description of @p status ("invalid argument"). */
inline std::string status_string(zrt_status_t status) {
  return zrt_status_string(status);
}

/** The message of the last error raised on the calling thread ("" if none). */
inline std::string last_error_message() {
  return zrt_last_error_message();
}

/** Throws zrt::error unless @p status is ZRT_SUCCESS or ZRT_IN_PROGRESS. */
inline zrt_status_t check(zrt_status_t status) {
  if (status != ZRT_SUCCESS && status != ZRT_IN_PROGRESS) {
    const char *message = zrt_last_error_message();
    throw error(status, message && *message ? message : zrt_status_string(status));
  }
  return status;
}

/** The element type of T as zerort names it (float, double; 16-bit types are explicit). */
template <class T>
constexpr zrt_dtype_t dtype_of() {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "pass the dtype of 16-bit elements");
  if constexpr (sizeof(T) == 8)
    return ZRT_DTYPE_FP64;
  else
    return ZRT_DTYPE_FP32;
}

namespace detail {

// A snprintf-like call (buf, size, length_p) as a std::string.
template <class F>
std::string text_of(F &&call) {
  size_t length = 0;
  check(call(nullptr, 0, &length));
  std::string text(length, '\0');
  check(call(text.data(), length + 1, &length));
  text.resize(length);
  return text;
}

// A move-only owner of a C handle and the call that releases it.
template <class H, zrt_status_t (*Release)(H)>
class owner {
 public:
  owner() = default;
  explicit owner(H h) noexcept : h_(h) {}
  owner(owner &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  owner &operator=(owner &&o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  owner(const owner &) = delete;
  owner &operator=(const owner &) = delete;
  ~owner() { reset(); }
  H get() const noexcept { return h_; }
  explicit operator bool() const noexcept { return h_ != nullptr; }
  /** Releases the handle, throwing zrt::error if that fails. */
  void release_checked() {
    if (h_) check(Release(std::exchange(h_, nullptr)));
  }

 private:
  void reset() noexcept {
    if (h_) (void)Release(std::exchange(h_, nullptr));
  }
  H h_ = nullptr;
};

inline zrt_status_t wait_and_free(zrt_request_h r) {
  const zrt_status_t waited = zrt_request_wait(r);
  const zrt_status_t freed = zrt_request_free(r);
  return waited != ZRT_SUCCESS ? waited : freed;
}

// Sizes of two buffers that must agree, else ZRT_ERR_INVALID_ARGUMENT naming the member.
inline void same_size(size_t a, size_t b, const char *what) {
  if (a != b)
    throw error(ZRT_ERR_INVALID_ARGUMENT, std::string("zrt::") + what + ": buffer sizes differ (" +
                                              std::to_string(a) + " and " + std::to_string(b) +
                                              ")");
}

}  // namespace detail

/** The library actually loaded (zrt_get_version), which may differ from the header. */
struct version_info {
  unsigned major = 0, minor = 0, patch = 0;
  uint32_t api_version = 0;
};

inline version_info get_version() {
  version_info v;
  check(zrt_get_version(&v.major, &v.minor, &v.patch, &v.api_version));
  return v;
}

/** A byte count as zerort writes it ("1.5 GiB"). */
inline std::string format_bytes(uint64_t bytes) {
  return detail::text_of([&](char *buf, size_t size, size_t *length) {
    return zrt_format_bytes(bytes, buf, size, length);
  });
}

/** Every configuration key as JSON. */
inline std::string config_schema() {
  return detail::text_of(
      [&](char *buf, size_t size, size_t *length) { return zrt_config_schema(buf, size, length); });
}

/** The shard of a flat buffer that a rank owns (comm.h, "Partitioning and padding"). */
struct shard_info {
  size_t offset = 0; /**< first element of the shard */
  size_t length = 0; /**< valid elements in it */
  size_t shard = 0;  /**< padded shard size, equal on every rank */
};

inline shard_info shard_range(size_t count, int nranks, int rank) {
  shard_info s;
  check(zrt_shard_range(count, nranks, rank, &s.offset, &s.length, &s.shard));
  return s;
}

/** Bytes per element of @p dtype. */
inline size_t dtype_size(zrt_dtype_t dtype) {
  size_t size = 0;
  check(zrt_dtype_size(dtype, &size));
  return size;
}

/** Converts in (of @p from) into out (of @p to): equal counts, element sizes that match. */
template <class In, class Out>
void dtype_convert(std::span<const In> in, zrt_dtype_t from, std::span<Out> out, zrt_dtype_t to) {
  detail::same_size(in.size(), out.size(), "dtype_convert");
  if (sizeof(In) != dtype_size(from) || sizeof(Out) != dtype_size(to))
    throw error(ZRT_ERR_INVALID_ARGUMENT,
                "zrt::dtype_convert: an element type's size differs "
                "from its dtype's");
  check(zrt_dtype_convert(in.data(), from, out.data(), to, in.size()));
}

/** The checkpoint's attributes as JSON, without an engine or MPI. Not thread-safe. */
inline std::string checkpoint_describe(const std::string &path) {
  return detail::text_of([&](char *buf, size_t size, size_t *length) {
    return zrt_checkpoint_describe(path.c_str(), buf, size, length);
  });
}

/** A posted operation. Its destructor waits for it (a buffer is never left in use). */
class request {
 public:
  request() = default;
  explicit request(zrt_request_h h) : h_(h) {}
  /** True when done (throws if it failed). */
  bool test() { return check(zrt_request_test(h_.get())) == ZRT_SUCCESS; }
  /** Blocks until done, then releases the request (zrt_request_wait, zrt_request_free). */
  void wait() { h_.release_checked(); }
  zrt_request_h get() const noexcept { return h_.get(); }

 private:
  detail::owner<zrt_request_h, detail::wait_and_free> h_;
};

/** What comm::agree_status agreed: the lowest failed rank's status and message. */
struct agreement {
  zrt_status_t status = ZRT_SUCCESS; /**< ZRT_SUCCESS when every rank succeeded */
  int failed_rank = -1;              /**< the lowest failed rank, -1 if none */
  std::string message;               /**< "rank R: <R's message>", "" on success */
};

/** A communicator: the context's own (not owned) or one made with comm::create. */
class comm {
 public:
  explicit comm(zrt_comm_h h) : h_(h) {}
  /** Collective over @p mpi_comm: a communicator of its own (destroyed with this one). */
  static comm create(zrt_context_h context, MPI_Comm mpi_comm,
                     const zrt_comm_params_t *params = nullptr) {
    zrt_comm_h h = nullptr;
    check(zrt_comm_create(context, mpi_comm, params, &h));
    comm c(h);
    c.owned_ = detail::owner<zrt_comm_h, zrt_comm_destroy>(h);
    return c;
  }
  /** Collective: destroys a communicator of comm::create now, throwing if that fails. */
  void destroy() { owned_.release_checked(); }
  int rank() const {
    int r = 0;
    check(zrt_comm_rank(h_, &r));
    return r;
  }
  int size() const {
    int s = 0;
    check(zrt_comm_size(h_, &s));
    return s;
  }
  std::string backend() const {
    const char *name = nullptr;
    check(zrt_comm_backend(h_, &name));
    return name;
  }
  /** Collective: every rank gets the lowest failed rank's status (not thrown: it is the
   * answer); throws only when the agreement itself failed. */
  agreement agree_status(zrt_status_t local_status) {
    agreement a;
    a.status = zrt_comm_agree_status(h_, local_status, &a.failed_rank);
    if (a.status != ZRT_SUCCESS) {
      if (a.failed_rank < 0) check(a.status);
      a.message = zrt_last_error_message();
    }
    return a;
  }
  /** Collective: host memory that collectives on this communicator may read in place
   * (zeroed); free it with mem_free before the communicator goes. */
  std::span<std::byte> mem_alloc(size_t bytes) {
    void *ptr = nullptr;
    check(zrt_comm_mem_alloc(h_, bytes, &ptr));
    return {static_cast<std::byte *>(ptr), bytes};
  }
  /** Collective. */
  void mem_free(void *ptr) { check(zrt_comm_mem_free(h_, ptr)); }
  void mem_free(std::span<std::byte> mem) { mem_free(mem.data()); }
  /** Collective, blocking. recv may be send (in place); sizes in elements must agree. */
  template <class T>
  void all_reduce(std::span<const T> send, std::span<T> recv, zrt_op_t op = ZRT_OP_SUM) {
    detail::same_size(send.size(), recv.size(), "comm::all_reduce");
    check(zrt_comm_all_reduce(h_, send.data(), recv.data(), send.size(), dtype_of<T>(), op));
  }
  template <class T>
  void all_reduce(std::span<T> inout, zrt_op_t op = ZRT_OP_SUM) {
    check(zrt_comm_all_reduce(h_, inout.data(), inout.data(), inout.size(), dtype_of<T>(), op));
  }
  /** Collective, non-blocking: the buffers stay untouched until the request is done. */
  template <class T>
  request all_reduce_post(std::span<const T> send, std::span<T> recv, zrt_op_t op = ZRT_OP_SUM) {
    detail::same_size(send.size(), recv.size(), "comm::all_reduce_post");
    zrt_request_h r = nullptr;
    check(
        zrt_comm_all_reduce_post(h_, send.data(), recv.data(), send.size(), dtype_of<T>(), op, &r));
    return request(r);
  }
  template <class T>
  request all_reduce_post(std::span<T> inout, zrt_op_t op = ZRT_OP_SUM) {
    zrt_request_h r = nullptr;
    check(zrt_comm_all_reduce_post(h_, inout.data(), inout.data(), inout.size(), dtype_of<T>(), op,
                                   &r));
    return request(r);
  }
  /** Collective, blocking: send holds the total count, recv this rank's (padded) shard. */
  template <class T>
  void reduce_scatter(std::span<const T> send, std::span<T> recv, zrt_op_t op = ZRT_OP_SUM) {
    check_shard(send.size(), recv.size(), false, "comm::reduce_scatter");
    check(zrt_comm_reduce_scatter(h_, send.data(), recv.data(), send.size(), dtype_of<T>(), op));
  }
  /** send holds the total count (every rank's shard); recv this rank's shard. */
  template <class T>
  request reduce_scatter_post(std::span<const T> send, std::span<T> recv,
                              zrt_op_t op = ZRT_OP_SUM) {
    check_shard(send.size(), recv.size(), false, "comm::reduce_scatter_post");
    zrt_request_h r = nullptr;
    check(zrt_comm_reduce_scatter_post(h_, send.data(), recv.data(), send.size(), dtype_of<T>(), op,
                                       &r));
    return request(r);
  }
  /** Collective, blocking: send is this rank's shard, recv holds the total count. */
  template <class T>
  void all_gather(std::span<const T> send, std::span<T> recv) {
    check_shard(recv.size(), send.size(), true, "comm::all_gather");
    check(zrt_comm_all_gather(h_, send.data(), recv.data(), recv.size(), dtype_of<T>()));
  }
  /** recv holds the total count. */
  template <class T>
  request all_gather_post(std::span<const T> send, std::span<T> recv) {
    check_shard(recv.size(), send.size(), true, "comm::all_gather_post");
    zrt_request_h r = nullptr;
    check(zrt_comm_all_gather_post(h_, send.data(), recv.data(), recv.size(), dtype_of<T>(), &r));
    return request(r);
  }
  /** Collective, blocking. */
  template <class T>
  void broadcast(std::span<T> buf, int root) {
    check(zrt_comm_broadcast(h_, buf.data(), buf.size(), dtype_of<T>(), root));
  }
  template <class T>
  request broadcast_post(std::span<T> buf, int root) {
    zrt_request_h r = nullptr;
    check(zrt_comm_broadcast_post(h_, buf.data(), buf.size(), dtype_of<T>(), root, &r));
    return request(r);
  }
  zrt_comm_h get() const noexcept { return h_; }

 private:
  // This rank's side of a collective over a total of @p count elements holds its shard:
  // padded for a reduce-scatter's result, the valid length for an all-gather's input.
  void check_shard(size_t count, size_t mine, bool valid_only, const char *what) const {
    const shard_info s = shard_range(count, size(), rank());
    const size_t need = valid_only ? s.length : s.shard;
    if (mine < need)
      throw error(ZRT_ERR_INVALID_ARGUMENT, std::string("zrt::") + what + ": " +
                                                std::to_string(mine) + " elements for a shard of " +
                                                std::to_string(need));
  }
  zrt_comm_h h_;
  detail::owner<zrt_comm_h, zrt_comm_destroy> owned_;
};

/** A block of a pool, given back when this goes. The pool must outlive it. */
class pool_block {
 public:
  pool_block(zrt_pool_h pool, size_t bytes, zrt_lifetime_t lifetime = ZRT_LIFETIME_TRANSIENT)
      : pool_(pool), bytes_(bytes) {
    check(zrt_pool_alloc(pool, bytes, lifetime, &ptr_));
  }
  pool_block(pool_block &&o) noexcept
      : pool_(o.pool_), ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_) {}
  pool_block &operator=(pool_block &&o) noexcept {
    if (this != &o) {
      if (ptr_) (void)zrt_pool_free(pool_, ptr_);
      pool_ = o.pool_;
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = o.bytes_;
    }
    return *this;
  }
  pool_block(const pool_block &) = delete;
  pool_block &operator=(const pool_block &) = delete;
  ~pool_block() {
    if (ptr_) (void)zrt_pool_free(pool_, ptr_);
  }
  /** Gives the block back now, throwing if that fails. */
  void free() {
    if (ptr_) check(zrt_pool_free(pool_, std::exchange(ptr_, nullptr)));
  }
  void *data() const noexcept { return ptr_; }
  size_t size() const noexcept { return bytes_; }
  template <class T>
  std::span<T> as(size_t count) const noexcept {
    return {static_cast<T *>(ptr_), count};
  }

 private:
  zrt_pool_h pool_;
  void *ptr_ = nullptr;
  size_t bytes_ = 0;
};

/** Where a movable buffer is now (pool_buffer::pointer). */
struct buffer_location {
  void *ptr = nullptr;
  size_t bytes = 0;        /**< the size asked for */
  uint64_t generation = 0; /**< the pool's generation: ptr is valid while it is unchanged */
};

/** A movable buffer of a pool, freed when this goes. The pool must outlive it. */
class pool_buffer {
 public:
  pool_buffer(zrt_pool_h pool, size_t bytes, zrt_lifetime_t lifetime = ZRT_LIFETIME_TRANSIENT)
      : pool_(pool) {
    check(zrt_pool_alloc_movable(pool, bytes, lifetime, &h_));
  }
  pool_buffer(pool_buffer &&o) noexcept : pool_(o.pool_), h_(std::exchange(o.h_, nullptr)) {}
  pool_buffer &operator=(pool_buffer &&o) noexcept {
    if (this != &o) {
      if (h_) (void)zrt_pool_free_movable(pool_, h_);
      pool_ = o.pool_;
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  pool_buffer(const pool_buffer &) = delete;
  pool_buffer &operator=(const pool_buffer &) = delete;
  ~pool_buffer() {
    if (h_) (void)zrt_pool_free_movable(pool_, h_);
  }
  /** The current address, size and the pool's generation. */
  buffer_location pointer() const {
    buffer_location l;
    check(zrt_pool_pointer(pool_, h_, &l.ptr, &l.bytes, &l.generation));
    return l;
  }
  /** Keeps the buffer in place until unlock() (locks nest) and returns its address. */
  void *lock() {
    void *ptr = nullptr;
    check(zrt_pool_lock(pool_, h_, &ptr));
    return ptr;
  }
  void unlock() { check(zrt_pool_unlock(pool_, h_)); }
  /** Frees the buffer now, throwing if that fails (ZRT_ERR_INVALID_STATE while locked). */
  void free() {
    if (h_) {
      check(zrt_pool_free_movable(pool_, h_));
      h_ = nullptr;
    }
  }
  zrt_buffer_h get() const noexcept { return h_; }

 private:
  zrt_pool_h pool_;
  zrt_buffer_h h_ = nullptr;
};

/** A memory pool: the context's own (context::pool, not owned) or one of pool::create. */
class pool {
 public:
  explicit pool(zrt_pool_h h) : h_(h) {}
  /** A pool of its own (destroyed with this one); @p params may be null (host). */
  static pool create(zrt_context_h context, const zrt_pool_params_t *params = nullptr) {
    zrt_pool_h h = nullptr;
    check(zrt_pool_create(context, params, &h));
    pool p(h);
    p.owned_ = detail::owner<zrt_pool_h, zrt_pool_destroy>(h);
    return p;
  }
  /** Destroys a pool of pool::create now (ZRT_ERR_INVALID_STATE while it has blocks). */
  void destroy() { owned_.release_checked(); }
  /** Memory that never moves. */
  pool_block alloc(size_t bytes, zrt_lifetime_t lifetime = ZRT_LIFETIME_TRANSIENT) {
    return pool_block(h_, bytes, lifetime);
  }
  /** A buffer the pool may move when it compacts (read its address with pointer()). */
  pool_buffer alloc_movable(size_t bytes, zrt_lifetime_t lifetime = ZRT_LIFETIME_TRANSIENT) {
    return pool_buffer(h_, bytes, lifetime);
  }
  /** Compacts the pool; returns the bytes moved. */
  size_t defragment() {
    size_t moved = 0;
    check(zrt_pool_defragment(h_, &moved));
    return moved;
  }
  /** Returns free whole segments to the system; returns the bytes released. */
  size_t trim() {
    size_t released = 0;
    check(zrt_pool_trim(h_, &released));
    return released;
  }
  zrt_pool_stats_t stats() const {
    zrt_pool_stats_t stats{};
    stats.field_mask = ZRT_POOL_STATS_FIELD_ALL;
    check(zrt_pool_stats(h_, &stats));
    return stats;
  }
  zrt_pool_h get() const noexcept { return h_; }

 private:
  zrt_pool_h h_;
  detail::owner<zrt_pool_h, zrt_pool_destroy> owned_;
};

/** An offloaded tensor: fetch() brings it back; dropped unfetched, it is discarded. */
class offload_token {
 public:
  offload_token(zrt_offload_h offload, const void *src, size_t bytes)
      : offload_(offload), bytes_(bytes) {
    check(zrt_offload_push(offload, src, bytes, &token_));
  }
  offload_token(offload_token &&o) noexcept
      : offload_(o.offload_), token_(std::exchange(o.token_, nullptr)), bytes_(o.bytes_) {}
  offload_token &operator=(offload_token &&) = delete;
  offload_token(const offload_token &) = delete;
  offload_token &operator=(const offload_token &) = delete;
  ~offload_token() {
    if (token_) (void)zrt_offload_discard(offload_, token_);
  }
  /** True once the push has finished copying (its source may be reused). */
  bool test() const { return check(zrt_offload_test(offload_, token_)) == ZRT_SUCCESS; }
  /** Blocks until the push has finished copying. */
  void wait() const { check(zrt_offload_wait(offload_, token_)); }
  void prefetch() { check(zrt_offload_prefetch(offload_, token_)); }
  /** Starts the copy back straight into @p dst, which fetch must then be given. */
  void prefetch_into(void *dst) { check(zrt_offload_prefetch_into(offload_, token_, dst)); }
  /** Copies the tensor into @p dst and releases the token. */
  void fetch(void *dst) {
    check(zrt_offload_fetch(offload_, token_, dst));
    token_ = nullptr;
  }
  template <class T>
  void fetch(std::span<T> dst) {
    detail::same_size(dst.size_bytes(), bytes_, "offload_token::fetch");
    fetch(static_cast<void *>(dst.data()));
  }
  /** Releases the token without fetching it, throwing if that fails. */
  void discard() {
    if (token_) {
      check(zrt_offload_discard(offload_, token_));
      token_ = nullptr;
    }
  }
  size_t size() const noexcept { return bytes_; }
  zrt_offload_token_h get() const noexcept { return token_; }

 private:
  zrt_offload_h offload_;
  zrt_offload_token_h token_ = nullptr;
  size_t bytes_ = 0;
};

/** An offload engine: the context's own (context::offload, not owned) or offload::create's. */
class offload {
 public:
  explicit offload(zrt_offload_h h) : h_(h) {}
  /** An engine of its own (destroyed with this one); @p params may be null. */
  static offload create(zrt_context_h context, const zrt_offload_params_t *params = nullptr) {
    zrt_offload_h h = nullptr;
    check(zrt_offload_create(context, params, &h));
    offload o(h);
    o.owned_ = detail::owner<zrt_offload_h, zrt_offload_destroy>(h);
    return o;
  }
  /** Destroys an engine of offload::create now, throwing if that fails. */
  void destroy() { owned_.release_checked(); }
  /** Starts copying @p src into the ring; it stays unchanged until the token's wait. */
  offload_token push(const void *src, size_t bytes) { return offload_token(h_, src, bytes); }
  template <class T>
  offload_token push(std::span<const T> src) {
    return offload_token(h_, src.data(), src.size_bytes());
  }
  zrt_offload_stats_t stats() const {
    zrt_offload_stats_t stats{};
    stats.field_mask = ZRT_OFFLOAD_STATS_FIELD_ALL;
    check(zrt_offload_stats(h_, &stats));
    return stats;
  }
  zrt_offload_h get() const noexcept { return h_; }

 private:
  zrt_offload_h h_;
  detail::owner<zrt_offload_h, zrt_offload_destroy> owned_;
};

/** The ZeRO engine (zerort/engine.h) and its checkpoints. Collective calls stay collective. */
class engine {
 public:
  /** Collective: set params.field_mask to the fields you set. */
  engine(zrt_context_h context, const zrt_engine_params_t &params) {
    zrt_engine_h h = nullptr;
    check(zrt_engine_create(context, &params, &h));
    h_ = detail::owner<zrt_engine_h, zrt_engine_destroy>(h);
  }
  /** shape in row-major (C) order. */
  zrt_param_h param_register(const std::string &name, zrt_dtype_t dtype,
                             std::span<const int64_t> shape) {
    zrt_param_h p = nullptr;
    check(zrt_param_register(get(), name.c_str(), dtype, static_cast<int>(shape.size()),
                             shape.data(), &p));
    return p;
  }
  zrt_param_h param_register(const std::string &name, zrt_dtype_t dtype,
                             std::initializer_list<int64_t> shape) {
    return param_register(name, dtype, std::span<const int64_t>(shape.begin(), shape.size()));
  }
  zrt_param_info_t param_info(zrt_param_h p) const {
    zrt_param_info_t info{};
    info.field_mask = ZRT_PARAM_INFO_FIELD_ALL;
    check(zrt_param_info(get(), p, &info));
    return info;
  }
  /** Parameters registered so far. */
  int param_count() const {
    int count = 0;
    check(zrt_engine_param_count(get(), &count));
    return count;
  }
  /** The parameter registered @p index -th. */
  zrt_param_h param_at(int index) const {
    zrt_param_h p = nullptr;
    check(zrt_engine_param_at(get(), index, &p));
    return p;
  }
  /** Elements of @p p (param_info's numel). */
  size_t numel(zrt_param_h p) const { return static_cast<size_t>(param_info(p).numel); }
  /** Collective. */
  void commit() { check(zrt_engine_commit(get())); }
  /** Every rank passes the same values: fp32, or 16-bit ones of the compute dtype. */
  void param_set(zrt_param_h p, std::span<const float> values) {
    check_size(p, values.size(), "param_set");
    check(zrt_param_set(get(), p, values.data(), ZRT_DTYPE_FP32));
  }
  void param_set(zrt_param_h p, std::span<const uint16_t> values, zrt_dtype_t dtype) {
    check_size(p, values.size(), "param_set");
    check(zrt_param_set(get(), p, values.data(), dtype));
  }
  /** Collective: the fp32 master values. */
  std::vector<float> param_get(zrt_param_h p) const {
    std::vector<float> values(numel(p));
    check(zrt_param_get(get(), p, values.data(), ZRT_DTYPE_FP32));
    return values;
  }
  /** Collective: the master values into @p values (fp32, or 16-bit as @p dtype). */
  void param_get(zrt_param_h p, std::span<float> values) const {
    check_size(p, values.size(), "param_get");
    check(zrt_param_get(get(), p, values.data(), ZRT_DTYPE_FP32));
  }
  void param_get(zrt_param_h p, std::span<uint16_t> values, zrt_dtype_t dtype) const {
    check_size(p, values.size(), "param_get");
    check(zrt_param_get(get(), p, values.data(), dtype));
  }
  /** The parameter's memory in the compute dtype (T = float for fp32, uint16_t for 16-bit). */
  template <class T = float>
  std::span<T> param_data(zrt_param_h p) const {
    void *data = nullptr;
    check(zrt_param_data(get(), p, &data));
    return {static_cast<T *>(data), numel(p)};
  }
  /** Where backward writes the gradient, valid until param_grad_ready(p). */
  template <class T = float>
  std::span<T> param_grad_data(zrt_param_h p) const {
    void *data = nullptr;
    check(zrt_param_grad_data(get(), p, &data));
    return {static_cast<T *>(data), numel(p)};
  }
  /** zrt_param_grad_buffer: the buffer, and whether backward overwrites it (or adds). */
  template <class T = float>
  std::pair<std::span<T>, zrt_grad_write_t> param_grad_buffer(zrt_param_h p) const {
    void *data = nullptr;
    zrt_grad_write_t write = ZRT_GRAD_WRITE_ADD;
    check(zrt_param_grad_buffer(get(), p, &data, &write));
    return {std::span<T>{static_cast<T *>(data), numel(p)}, write};
  }
  void param_grad_ready(zrt_param_h p) { check(zrt_param_grad_ready(get(), p)); }
  /** Stage 3, collective: assemble @p p; other stages: nothing. */
  void param_gather(zrt_param_h p) { check(zrt_param_gather(get(), p)); }
  void param_release(zrt_param_h p) { check(zrt_param_release(get(), p)); }
  void param_set_weight_decay(zrt_param_h p, double weight_decay) {
    check(zrt_param_set_weight_decay(get(), p, weight_decay));
  }
  /** Collective. */
  zrt_step_report_t step() {
    zrt_step_report_t report{};
    report.field_mask = ZRT_STEP_REPORT_FIELD_ALL;
    check(zrt_engine_step(get(), &report));
    return report;
  }
  void set_lr(double lr) { check(zrt_engine_set_lr(get(), lr)); }
  /** The program's CUDA stream (a cudaStream_t; null: the default stream). */
  void set_stream(void *stream) { check(zrt_engine_set_stream(get(), stream)); }
  double loss_scale() const {
    double scale = 0;
    check(zrt_engine_loss_scale(get(), &scale));
    return scale;
  }
  zrt_memory_report_t memory() const {
    zrt_memory_report_t report{};
    report.field_mask = ZRT_MEMORY_REPORT_FIELD_ALL;
    check(zrt_engine_memory(get(), &report));
    return report;
  }
  /** What the engine resolved, as JSON. */
  std::string describe() const {
    return detail::text_of([&](char *buf, size_t size, size_t *length) {
      return zrt_engine_describe(get(), buf, size, length);
    });
  }
  /** Collective. */
  void checkpoint_save(const std::string &path, const zrt_checkpoint_params_t *params = nullptr) {
    check(zrt_checkpoint_save(get(), path.c_str(), params));
  }
  /** Collective: copies the state, writes it in the background; the request's wait (or
   * test) says whether the save succeeded (zrt_checkpoint_save_post). */
  request checkpoint_save_post(const std::string &path,
                               const zrt_checkpoint_params_t *params = nullptr) {
    zrt_request_h r = nullptr;
    check(zrt_checkpoint_save_post(get(), path.c_str(), params, &r));
    return request(r);
  }
  /** Collective. */
  void checkpoint_load(const std::string &path) { check(zrt_checkpoint_load(get(), path.c_str())); }
  /** Collective: destroys the engine now, throwing if that fails. */
  void destroy() { h_.release_checked(); }
  zrt_engine_h get() const noexcept { return h_.get(); }

  // Names of before the naming scheme, kept one version.
  [[deprecated("use param_register")]] zrt_param_h register_param(
      const std::string &name, zrt_dtype_t dtype, std::initializer_list<int64_t> shape) {
    return param_register(name, dtype, shape);
  }
  [[deprecated("use param_set")]] void set(zrt_param_h p, std::span<const float> values) {
    param_set(p, values);
  }
  [[deprecated("use param_get")]] std::vector<float> get_values(zrt_param_h p) const {
    return param_get(p);
  }
  template <class T = float>
  [[deprecated("use param_grad_data")]] std::span<T> grad_data(zrt_param_h p) const {
    return param_grad_data<T>(p);
  }
  [[deprecated("use param_grad_ready")]] void grad_ready(zrt_param_h p) { param_grad_ready(p); }
  [[deprecated("use param_gather")]] void gather(zrt_param_h p) { param_gather(p); }
  [[deprecated("use param_release")]] void release(zrt_param_h p) { param_release(p); }
  [[deprecated("use checkpoint_save")]] void save(const std::string &path,
                                                  const zrt_checkpoint_params_t *params = nullptr) {
    checkpoint_save(path, params);
  }
  [[deprecated("use checkpoint_save_post")]] request save_post(
      const std::string &path, const zrt_checkpoint_params_t *params = nullptr) {
    return checkpoint_save_post(path, params);
  }
  /** API 2: the raw handle, for zrt_checkpoint_wait. */
  [[deprecated("use checkpoint_save_post")]] zrt_checkpoint_request_h save_async(
      const std::string &path, const zrt_checkpoint_params_t *params = nullptr) {
    zrt_request_h r = nullptr;
    check(zrt_checkpoint_save_post(get(), path.c_str(), params, &r));
    return r;
  }
  [[deprecated("use checkpoint_load")]] void load(const std::string &path) {
    checkpoint_load(path);
  }

 private:
  void check_size(zrt_param_h p, size_t n, const char *what) const {
    if (n != numel(p))
      throw error(ZRT_ERR_INVALID_ARGUMENT, std::string("zrt::engine::") + what + ": " +
                                                std::to_string(n) + " values for a parameter of " +
                                                std::to_string(numel(p)));
  }
  detail::owner<zrt_engine_h, zrt_engine_destroy> h_;
};

/** A checkpoint file read or written without an engine (zrt_checkpoint_open/create).
 * Not thread-safe: no two checkpoint calls may run at once in a process. A created file is
 * published when it is closed, by close() or by the destructor (the C API has no abort):
 * call close() to learn whether that worked. */
class checkpoint_file {
 public:
  /** Opens @p path read-only, serially (no MPI needed). */
  static checkpoint_file open(const std::string &path) {
    zrt_checkpoint_h h = nullptr;
    check(zrt_checkpoint_open(path.c_str(), &h));
    return checkpoint_file(h);
  }
  /** Starts a weights-only checkpoint at @p path, published by close() (or the
   * destructor); @p metadata is JSON text or empty. */
  static checkpoint_file create(const std::string &path, const std::string &metadata = "") {
    zrt_checkpoint_h h = nullptr;
    check(zrt_checkpoint_create(path.c_str(), metadata.empty() ? nullptr : metadata.c_str(), &h));
    return checkpoint_file(h);
  }
  /** Closes now (a created file is published), throwing if that fails. */
  void close() { h_.release_checked(); }
  /** Datasets in the file. */
  int tensor_count() const {
    int count = 0;
    check(zrt_checkpoint_tensor_count(get(), &count));
    return count;
  }
  /** Dataset @p index (sorted by name): name, shape, checksum; name valid until close. */
  zrt_checkpoint_tensor_t tensor(int index) const {
    zrt_checkpoint_tensor_t t{};
    t.field_mask = ZRT_CHECKPOINT_TENSOR_FIELD_ALL;
    check(zrt_checkpoint_tensor(get(), index, &t));
    return t;
  }
  /** Dataset @p index's fp32 values, row-major. */
  std::vector<float> read(int index) const {
    std::vector<float> values(static_cast<size_t>(tensor(index).numel));
    check(zrt_checkpoint_read(get(), index, values.data()));
    return values;
  }
  void read(int index, std::span<float> values) const {
    detail::same_size(values.size(), static_cast<size_t>(tensor(index).numel),
                      "checkpoint_file::read");
    check(zrt_checkpoint_read(get(), index, values.data()));
  }
  /** True when dataset @p index's checksum matches the stored one. */
  bool verify(int index) const {
    int ok = 0;
    check(zrt_checkpoint_verify(get(), index, &ok));
    return ok != 0;
  }
  /** Adds parameter @p name (params/NAME) to a created file. */
  void write(const std::string &name, std::span<const int64_t> shape,
             std::span<const float> values) {
    int64_t numel = 1;
    for (int64_t extent : shape)
      numel *= extent;
    detail::same_size(values.size(), static_cast<size_t>(numel), "checkpoint_file::write");
    check(zrt_checkpoint_write(get(), name.c_str(), static_cast<int>(shape.size()), shape.data(),
                               values.data()));
  }
  void write(const std::string &name, std::initializer_list<int64_t> shape,
             std::span<const float> values) {
    write(name, std::span<const int64_t>(shape.begin(), shape.size()), values);
  }
  zrt_checkpoint_h get() const noexcept { return h_.get(); }

 private:
  explicit checkpoint_file(zrt_checkpoint_h h) : h_(h) {}
  detail::owner<zrt_checkpoint_h, zrt_checkpoint_close> h_;
};

/** An engine planned, not made (zerort/plan.h): no MPI, no allocation. */
class plan {
 public:
  /** @p engine_params null: the defaults; @p machine null: one rank. */
  explicit plan(const zrt_engine_params_t *engine_params = nullptr,
                const zrt_plan_params_t *machine = nullptr) {
    zrt_plan_h h = nullptr;
    check(zrt_plan_create(engine_params, machine, &h));
    h_ = detail::owner<zrt_plan_h, zrt_plan_destroy>(h);
  }
  /** As engine::param_register would register it, in the engine's order. */
  void add_param(const std::string &name, std::span<const int64_t> shape) {
    check(zrt_plan_add_param(get(), name.c_str(), static_cast<int>(shape.size()), shape.data()));
  }
  void add_param(const std::string &name, std::initializer_list<int64_t> shape) {
    add_param(name, std::span<const int64_t>(shape.begin(), shape.size()));
  }
  /** engine::memory of a rank of the planned engine right after commit. */
  zrt_memory_report_t memory() const {
    zrt_memory_report_t report{};
    report.field_mask = ZRT_MEMORY_REPORT_FIELD_ALL;
    check(zrt_plan_memory(get(), &report));
    return report;
  }
  /** Stage 3: a bound on the gathered-parameter bytes; 0 at stages 0-2. */
  int64_t gathered_bytes() const {
    int64_t bytes = 0;
    check(zrt_plan_gathered_bytes(get(), &bytes));
    return bytes;
  }
  /** The collectives of one optimizer step. */
  zrt_plan_comm_t comm() const {
    zrt_plan_comm_t c{};
    c.field_mask = ZRT_PLAN_COMM_FIELD_ALL;
    check(zrt_plan_comm(get(), &c));
    return c;
  }
  /** Frees the plan now, throwing if that fails. */
  void destroy() { h_.release_checked(); }
  zrt_plan_h get() const noexcept { return h_.get(); }

 private:
  detail::owner<zrt_plan_h, zrt_plan_destroy> h_;
};

/** zrt_init .. zrt_finalize. Collective over @p mpi_comm (MPI initialized before). */
class context {
 public:
  explicit context(MPI_Comm mpi_comm, const zrt_init_params_t *params = nullptr) {
    zrt_context_h h = nullptr;
    check(zrt_init(mpi_comm, params, &h));
    h_ = detail::owner<zrt_context_h, zrt_finalize>(h);
  }
  zrt_context_attr_t query() const {
    zrt_context_attr_t attr{};
    attr.field_mask = ZRT_CONTEXT_ATTR_FIELD_ALL;
    check(zrt_context_query(get(), &attr));
    return attr;
  }
  /** The context's description as JSON. */
  std::string describe() const {
    return detail::text_of([&](char *buf, size_t size, size_t *length) {
      return zrt_context_describe(get(), buf, size, length);
    });
  }
  /** The communicator over the ranks of zrt_init (the context owns it). */
  zrt::comm comm() const {
    zrt_comm_h c = nullptr;
    check(zrt_context_comm(get(), &c));
    return zrt::comm(c);
  }
  /** The context's pool of @p space (the context owns it). */
  zrt::pool pool(zrt_memory_space_t space = ZRT_MEMORY_HOST) const {
    zrt_pool_h p = nullptr;
    check(zrt_context_pool(get(), space, &p));
    return zrt::pool(p);
  }
  /** The context's offload engine (the context owns it). */
  zrt::offload offload() const {
    zrt_offload_h o = nullptr;
    check(zrt_context_offload(get(), &o));
    return zrt::offload(o);
  }
  /** The host memory limit that leaves this rank the least room now. */
  zrt_memory_limit_t memory_limit() const {
    zrt_memory_limit_t limit{};
    limit.field_mask = ZRT_MEMORY_LIMIT_FIELD_ALL;
    check(zrt_context_memory_limit(get(), &limit));
    return limit;
  }
  /** One Adam/AdamW step on your own arrays (equal sizes; grads fp32 here). */
  void optimizer_adam(const zrt_adam_args_t &args, std::span<float> weights, std::span<float> m,
                      std::span<float> v, std::span<const float> grads) {
    adam_sizes(weights.size(), m.size(), v.size(), grads.size());
    check(zrt_optimizer_adam(get(), &args, weights.data(), m.data(), v.data(), grads.data(),
                             ZRT_DTYPE_FP32, weights.size()));
  }
  /** The same with 16-bit gradients of @p grad_dtype (bf16, fp16). */
  void optimizer_adam(const zrt_adam_args_t &args, std::span<float> weights, std::span<float> m,
                      std::span<float> v, std::span<const uint16_t> grads, zrt_dtype_t grad_dtype) {
    adam_sizes(weights.size(), m.size(), v.size(), grads.size());
    check(zrt_optimizer_adam(get(), &args, weights.data(), m.data(), v.data(), grads.data(),
                             grad_dtype, weights.size()));
  }
  /** The optimizer kernels' instruction set: "avx512", "avx2" or "scalar". */
  std::string optimizer_isa() const {
    const char *isa = nullptr;
    check(zrt_optimizer_isa(get(), &isa));
    return isa;
  }
  /** Collective: zrt_finalize now, throwing if it fails. */
  void finalize() { h_.release_checked(); }
  zrt_context_h get() const noexcept { return h_.get(); }

  [[deprecated("use comm")]] zrt::comm world() const { return comm(); }

 private:
  static void adam_sizes(size_t w, size_t m, size_t v, size_t g) {
    detail::same_size(w, m, "context::optimizer_adam");
    detail::same_size(w, v, "context::optimizer_adam");
    detail::same_size(w, g, "context::optimizer_adam");
  }
  detail::owner<zrt_context_h, zrt_finalize> h_;
};

#if __has_include(<zerort/model.h>)
/**
 * A model from a configuration file (zerort/model.h; link zerort::nn): one call a training
 * step, in-process inference, checkpoints and exports. Tensors are spans of floats with a
 * row-major shape whose first dimension is the batch, on the host or (CUDA builds) the
 * device.
 */
class model {
 public:
  /** Collective: zrt_model_create from a file (.json, .yaml) or JSON text. */
  model(const context &ctx, const std::string &config) {
    zrt_model_h h = nullptr;
    check(zrt_model_create(ctx.get(), config.c_str(), &h));
    h_ = detail::owner<zrt_model_h, zrt_model_destroy>(h);
  }
  /** Collective: one training micro-step; returns the loss averaged over the ranks. */
  double train_step(std::span<const float> input, std::initializer_list<int64_t> input_shape,
                    std::span<const float> target, std::initializer_list<int64_t> target_shape) {
    zrt_tensor_t in = tensor(input.data(), input.size(), input_shape, "model::train_step input");
    zrt_tensor_t tg =
        tensor(target.data(), target.size(), target_shape, "model::train_step target");
    double loss = 0;
    check(zrt_model_train_step(get(), &in, &tg, &loss));
    return loss;
  }
  /** Collective: inference of @p input into @p output (shapes with the batch first). */
  void forward(std::span<const float> input, std::initializer_list<int64_t> input_shape,
               std::span<float> output, std::initializer_list<int64_t> output_shape) {
    zrt_tensor_t in = tensor(input.data(), input.size(), input_shape, "model::forward input");
    zrt_tensor_t out = tensor(output.data(), output.size(), output_shape, "model::forward output");
    check(zrt_model_forward(get(), &in, &out));
  }
  /** Collective: the forward half of a step whose loss the program computes
   * (zrt_model_forward_train). */
  void forward_train(std::span<const float> input, std::initializer_list<int64_t> input_shape,
                     std::span<float> output, std::initializer_list<int64_t> output_shape) {
    zrt_tensor_t in = tensor(input.data(), input.size(), input_shape, "model::forward_train input");
    zrt_tensor_t out =
        tensor(output.data(), output.size(), output_shape, "model::forward_train output");
    check(zrt_model_forward_train(get(), &in, &out));
  }
  /** Collective: backward from the program's dL/d(output), then the step (zrt_model_backward_step).
   */
  void backward_step(std::span<const float> output_grad, std::initializer_list<int64_t> shape) {
    zrt_tensor_t g =
        tensor(output_grad.data(), output_grad.size(), shape, "model::backward_step output_grad");
    check(zrt_model_backward_step(get(), &g));
  }
  /** Collective: zrt_model_save. */
  void save(const std::string &path) { check(zrt_model_save(get(), path.c_str())); }
  /** Collective: zrt_model_load. */
  void load(const std::string &path) { check(zrt_model_load(get(), path.c_str())); }
  /** Collective: zrt_model_export. */
  void export_to(const std::string &path, zrt_model_format_t format) {
    check(zrt_model_export(get(), path.c_str(), format));
  }
  zrt_model_info_t query() const {
    zrt_model_info_t info{};
    check(zrt_model_query(get(), &info));
    return info;
  }
  std::string describe() const {
    return detail::text_of([&](char *buf, size_t size, size_t *length) {
      return zrt_model_describe(get(), buf, size, length);
    });
  }
  zrt_model_h get() const noexcept { return h_.get(); }

 private:
  static zrt_tensor_t tensor(const float *data, size_t size, std::initializer_list<int64_t> shape,
                             const char *what) {
    zrt_tensor_t t{};
    t.data = const_cast<float *>(data);  // read-only for inputs: the C API takes one type
    t.dtype = ZRT_DTYPE_FP32;
    t.ndim = static_cast<int>(shape.size());
    if (shape.size() == 0 || shape.size() > ZRT_TENSOR_MAX_DIMS)
      throw error(ZRT_ERR_INVALID_ARGUMENT,
                  std::string("zrt::") + what + ": a shape of 1 to 8 dimensions");
    size_t n = 1, d = 0;
    for (int64_t e : shape) {
      t.shape[d++] = e;
      n *= static_cast<size_t>(e < 0 ? 0 : e);
    }
    detail::same_size(size, n, what);
    return t;
  }
  detail::owner<zrt_model_h, zrt_model_destroy> h_;
};
#endif

}  // namespace zrt
