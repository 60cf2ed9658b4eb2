/**
 * @file zerort/zerort.hpp
 * @brief C++20 interface over the C ABI, header-only: owners that release what they hold
 * (context, communicator, request, engine, pool block, offload token), errors as
 * zrt::error (the status and the message), std::span views of parameter and gradient
 * memory. Everything here is inline over zerort.h: the library exports no C++ symbol, so
 * a program may use another C++ compiler or standard library than zerort was built with.
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

}  // namespace detail

/** A posted collective. Its destructor waits for it (a buffer is never left in use). */
class request {
 public:
  request() = default;
  explicit request(zrt_request_h h) : h_(h) {}
  /** True when done (throws if it failed). */
  bool test() { return check(zrt_request_test(h_.get())) == ZRT_SUCCESS; }
  /** Blocks until done, then releases the request. */
  void wait() { h_.release_checked(); }
  zrt_request_h get() const noexcept { return h_.get(); }

 private:
  detail::owner<zrt_request_h, detail::wait_and_free> h_;
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
  /** recv may be send (in place); sizes in elements must agree. */
  template <class T>
  void all_reduce(std::span<const T> send, std::span<T> recv, zrt_op_t op = ZRT_OP_SUM) {
    if (send.size() != recv.size())
      throw error(ZRT_ERR_INVALID_ARGUMENT, "zrt::comm::all_reduce: send and recv sizes differ");
    check(zrt_comm_all_reduce(h_, send.data(), recv.data(), send.size(), dtype_of<T>(), op));
  }
  template <class T>
  void all_reduce(std::span<T> inout, zrt_op_t op = ZRT_OP_SUM) {
    check(zrt_comm_all_reduce(h_, inout.data(), inout.data(), inout.size(), dtype_of<T>(), op));
  }
  /** send holds the total count (every rank's shard); recv this rank's shard. */
  template <class T>
  request reduce_scatter_post(std::span<const T> send, std::span<T> recv,
                              zrt_op_t op = ZRT_OP_SUM) {
    zrt_request_h r = nullptr;
    check(zrt_comm_reduce_scatter_post(h_, send.data(), recv.data(), send.size(), dtype_of<T>(), op,
                                       &r));
    return request(r);
  }
  /** recv holds the total count. */
  template <class T>
  request all_gather_post(std::span<const T> send, std::span<T> recv) {
    zrt_request_h r = nullptr;
    check(zrt_comm_all_gather_post(h_, send.data(), recv.data(), recv.size(), dtype_of<T>(), &r));
    return request(r);
  }
  template <class T>
  void broadcast(std::span<T> buf, int root) {
    check(zrt_comm_broadcast(h_, buf.data(), buf.size(), dtype_of<T>(), root));
  }
  zrt_comm_h get() const noexcept { return h_; }

 private:
  zrt_comm_h h_;
  detail::owner<zrt_comm_h, zrt_comm_destroy> owned_;
};

/** A block of a pool, given back when this goes. */
class pool_block {
 public:
  pool_block(zrt_pool_h pool, size_t bytes, zrt_lifetime_t lifetime = ZRT_LIFETIME_TRANSIENT)
      : pool_(pool) {
    check(zrt_pool_alloc(pool, bytes, lifetime, &ptr_));
  }
  pool_block(pool_block &&o) noexcept : pool_(o.pool_), ptr_(std::exchange(o.ptr_, nullptr)) {}
  pool_block &operator=(pool_block &&o) noexcept {
    if (this != &o) {
      if (ptr_) (void)zrt_pool_free(pool_, ptr_);
      pool_ = o.pool_;
      ptr_ = std::exchange(o.ptr_, nullptr);
    }
    return *this;
  }
  pool_block(const pool_block &) = delete;
  pool_block &operator=(const pool_block &) = delete;
  ~pool_block() {
    if (ptr_) (void)zrt_pool_free(pool_, ptr_);
  }
  void *data() const noexcept { return ptr_; }
  template <class T>
  std::span<T> as(size_t count) const noexcept {
    return {static_cast<T *>(ptr_), count};
  }

 private:
  zrt_pool_h pool_;
  void *ptr_ = nullptr;
};

/** An offloaded tensor: fetch() brings it back; dropped unfetched, it is discarded. */
class offload_token {
 public:
  offload_token(zrt_offload_h offload, const void *src, size_t bytes) : offload_(offload) {
    check(zrt_offload_push(offload, src, bytes, &token_));
  }
  offload_token(offload_token &&o) noexcept
      : offload_(o.offload_), token_(std::exchange(o.token_, nullptr)) {}
  offload_token &operator=(offload_token &&) = delete;
  offload_token(const offload_token &) = delete;
  offload_token &operator=(const offload_token &) = delete;
  ~offload_token() {
    if (token_) (void)zrt_offload_discard(offload_, token_);
  }
  void prefetch() { check(zrt_offload_prefetch(offload_, token_)); }
  /** Copies the tensor into @p dst and releases the token. */
  void fetch(void *dst) {
    check(zrt_offload_fetch(offload_, token_, dst));
    token_ = nullptr;
  }

 private:
  zrt_offload_h offload_;
  zrt_offload_token_h token_ = nullptr;
};

/** The ZeRO engine (zerort/engine.h). Collective calls stay collective. */
class engine {
 public:
  /** Collective: set params.field_mask to the fields you set. */
  engine(zrt_context_h context, const zrt_engine_params_t &params) {
    zrt_engine_h h = nullptr;
    check(zrt_engine_create(context, &params, &h));
    h_ = detail::owner<zrt_engine_h, zrt_engine_destroy>(h);
  }
  /** shape in row-major (C) order. */
  zrt_param_h register_param(const std::string &name, zrt_dtype_t dtype,
                             std::initializer_list<int64_t> shape) {
    std::vector<int64_t> dims(shape);
    zrt_param_h p = nullptr;
    check(zrt_param_register(get(), name.c_str(), dtype, static_cast<int>(dims.size()), dims.data(),
                             &p));
    return p;
  }
  void commit() { check(zrt_engine_commit(get())); }
  size_t numel(zrt_param_h p) const {
    zrt_param_info_t info{};
    info.field_mask = ZRT_PARAM_INFO_FIELD_SHAPE;
    check(zrt_param_info(get(), p, &info));
    return static_cast<size_t>(info.numel);
  }
  /** Every rank passes the same values (fp32 here). */
  void set(zrt_param_h p, std::span<const float> values) {
    check_size(p, values.size(), "set");
    check(zrt_param_set(get(), p, values.data(), ZRT_DTYPE_FP32));
  }
  /** Collective: the fp32 master values. */
  std::vector<float> get_values(zrt_param_h p) const {
    std::vector<float> values(numel(p));
    check(zrt_param_get(get(), p, values.data(), ZRT_DTYPE_FP32));
    return values;
  }
  /** The parameter's memory in the compute dtype (T = float for fp32, uint16_t for 16-bit). */
  template <class T = float>
  std::span<T> param_data(zrt_param_h p) const {
    void *data = nullptr;
    check(zrt_param_data(get(), p, &data));
    return {static_cast<T *>(data), numel(p)};
  }
  template <class T = float>
  std::span<T> grad_data(zrt_param_h p) const {
    void *data = nullptr;
    check(zrt_param_grad_data(get(), p, &data));
    return {static_cast<T *>(data), numel(p)};
  }
  void grad_ready(zrt_param_h p) { check(zrt_param_grad_ready(get(), p)); }
  void gather(zrt_param_h p) { check(zrt_param_gather(get(), p)); }
  void release(zrt_param_h p) { check(zrt_param_release(get(), p)); }
  /** Collective. */
  zrt_step_report_t step() {
    zrt_step_report_t report{};
    report.field_mask = ZRT_STEP_REPORT_FIELD_ALL;
    check(zrt_engine_step(get(), &report));
    return report;
  }
  zrt_memory_report_t memory() const {
    zrt_memory_report_t report{};
    report.field_mask = ZRT_MEMORY_REPORT_FIELD_ALL;
    check(zrt_engine_memory(get(), &report));
    return report;
  }
  void set_lr(double lr) { check(zrt_engine_set_lr(get(), lr)); }
  /** Collective. */
  void save(const std::string &path, const zrt_checkpoint_params_t *params = nullptr) {
    check(zrt_checkpoint_save(get(), path.c_str(), params));
  }
  /** Collective: copies the state, writes it in the background; the request's wait (or
   * test) says whether the save succeeded (zrt_checkpoint_save_post). */
  request save_post(const std::string &path, const zrt_checkpoint_params_t *params = nullptr) {
    zrt_request_h r = nullptr;
    check(zrt_checkpoint_save_post(get(), path.c_str(), params, &r));
    return request(r);
  }
  /** API 2: the raw handle, for zrt_checkpoint_wait. */
  [[deprecated("use save_post")]] zrt_checkpoint_request_h save_async(
      const std::string &path, const zrt_checkpoint_params_t *params = nullptr) {
    zrt_request_h r = nullptr;
    check(zrt_checkpoint_save_post(get(), path.c_str(), params, &r));
    return r;
  }
  /** Collective. */
  void load(const std::string &path) { check(zrt_checkpoint_load(get(), path.c_str())); }
  /** Collective: destroys the engine now, throwing if that fails. */
  void destroy() { h_.release_checked(); }
  zrt_engine_h get() const noexcept { return h_.get(); }

 private:
  void check_size(zrt_param_h p, size_t n, const char *what) const {
    if (n != numel(p))
      throw error(ZRT_ERR_INVALID_ARGUMENT, std::string("zrt::engine::") + what + ": " +
                                                std::to_string(n) + " values for a parameter of " +
                                                std::to_string(numel(p)));
  }
  detail::owner<zrt_engine_h, zrt_engine_destroy> h_;
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
  comm world() const {
    zrt_comm_h c = nullptr;
    check(zrt_context_comm(get(), &c));
    return comm(c);
  }
  zrt_pool_h pool(zrt_memory_space_t space = ZRT_MEMORY_HOST) const {
    zrt_pool_h p = nullptr;
    check(zrt_context_pool(get(), space, &p));
    return p;
  }
  zrt_offload_h offload() const {
    zrt_offload_h o = nullptr;
    check(zrt_context_offload(get(), &o));
    return o;
  }
  /** Collective: zrt_finalize now, throwing if it fails. */
  void finalize() { h_.release_checked(); }
  zrt_context_h get() const noexcept { return h_.get(); }

 private:
  detail::owner<zrt_context_h, zrt_finalize> h_;
};

}  // namespace zrt
