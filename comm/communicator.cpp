#include "comm/communicator.hpp"

#include <algorithm>
#include <climits>

#include "comm/dtype.hpp"
#include "comm/partition.hpp"
#include "runtime/context.hpp"
#include "runtime/log.hpp"
#include "runtime/mpi_error.hpp"

namespace zrt {

namespace {

// A signature of everything the ranks must agree on, folded into 62 bits so that it and
// its negation fit an int64 (one MPI_MAX all-reduce then yields both min and max).
int64_t signature(const CollArgs &a) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  auto mix = [&](uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  };
  mix(static_cast<uint64_t>(a.kind));
  mix(static_cast<uint64_t>(a.count));
  mix(static_cast<uint64_t>(a.dtype));
  mix(static_cast<uint64_t>(a.op));
  mix(static_cast<uint64_t>(a.root));
  return static_cast<int64_t>(h >> 2);
}

bool overlaps(const void *a, size_t a_bytes, const void *b, size_t b_bytes) {
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return a_bytes > 0 && b_bytes > 0 && pa < pb + b_bytes && pb < pa + a_bytes;
}

}  // namespace

const char *coll_name(CollKind kind) {
  switch (kind) {
    case CollKind::ReduceScatter:
      return "reduce_scatter";
    case CollKind::AllGather:
      return "all_gather";
    case CollKind::AllReduce:
      return "all_reduce";
    case CollKind::Broadcast:
      return "broadcast";
  }
  return "collective";
}

std::string CollArgs::describe() const {
  if (kind == CollKind::Broadcast)
    return fmt::format("{} #{} ({} x {}, root {})", coll_name(kind), seq, count, dtype_name(dtype),
                       root);
  if (kind == CollKind::AllGather)
    return fmt::format("{} #{} ({} x {})", coll_name(kind), seq, count, dtype_name(dtype));
  return fmt::format("{} #{} ({} x {}, {})", coll_name(kind), seq, count, dtype_name(dtype),
                     op_name(op));
}

HandleTable<Communicator> &comm_table() {
  static HandleTable<Communicator> table("communicator");
  return table;
}

HandleTable<Request> &request_table() {
  static HandleTable<Request> table("request");
  return table;
}

Communicator &comm_from(zrt_comm_h handle, const char *argument) {
  return comm_table().get(handle_value(handle), argument);
}

Request &request_from(zrt_request_h handle, const char *argument) {
  return request_table().get(handle_value(handle), argument);
}

Communicator::Communicator(Context &context, MPI_Comm user_comm, const Options &options, bool world)
    : context_(context), world_(world), deterministic_(options.deterministic) {
  if (user_comm == MPI_COMM_NULL) fail(ZRT_ERR_INVALID_ARGUMENT, "mpi_comm is MPI_COMM_NULL");
  int inter = 0;
  check_mpi(MPI_Comm_test_inter(user_comm, &inter), "MPI_Comm_test_inter(mpi_comm)");
  if (inter) fail(ZRT_ERR_INVALID_ARGUMENT, "mpi_comm is an inter-communicator");
  check_mpi(MPI_Comm_dup(user_comm, &comm_), "MPI_Comm_dup");
  try {
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    check_mpi(MPI_Comm_dup(comm_, &check_comm_), "MPI_Comm_dup");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    check_args_ = context.config().get_bool("comm.check_args");
    backend_ = create_backend(*this, options.backend);
  } catch (...) {
    if (check_comm_ != MPI_COMM_NULL) MPI_Comm_free(&check_comm_);
    MPI_Comm_free(&comm_);
    throw;
  }
  log::debug("communicator of {} ranks on backend {}", size_, backend_->name());
}

Communicator::~Communicator() {
  // Rejected posts' checks still involve the other ranks: finish them before freeing.
  while (!orphans_.empty())
    progress();
  backend_.reset();  // before the MPI communicators it may use
  if (check_comm_ != MPI_COMM_NULL) MPI_Comm_free(&check_comm_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void Communicator::validate(const CollArgs &a) const {
  size_t esize = dtype_size(a.dtype);
  if (a.kind != CollKind::AllGather && a.kind != CollKind::Broadcast) check_op(a.op);
  if (a.count > static_cast<size_t>(INT_MAX) * static_cast<size_t>(size_))
    fail(ZRT_ERR_NOT_SUPPORTED, "count {} is too large for backend {}", a.count, backend_->name());
  if (a.count == 0) return;
  Shard own = shard_range(a.count, size_, rank_);
  auto aligned = [&](const void *p) { return reinterpret_cast<uintptr_t>(p) % esize == 0; };
  switch (a.kind) {
    case CollKind::ReduceScatter:
      require_nonnull(a.send, "sendbuf");
      require_nonnull(a.recv, "recvbuf");
      if (overlaps(a.send, a.count * esize, a.recv, own.shard * esize))
        fail(ZRT_ERR_INVALID_ARGUMENT,
             "sendbuf and recvbuf overlap; reduce-scatter needs "
             "separate buffers");
      break;
    case CollKind::AllGather:
      if (own.length > 0) require_nonnull(a.send, "sendbuf");
      require_nonnull(a.recv, "recvbuf");
      if (a.send != static_cast<const char *>(a.recv) + own.offset * esize &&
          overlaps(a.send, own.length * esize, a.recv, a.count * esize))
        fail(ZRT_ERR_INVALID_ARGUMENT,
             "sendbuf overlaps recvbuf but is not this rank's slot of "
             "it (recvbuf + {} elements), the only in-place form",
             own.offset);
      break;
    case CollKind::AllReduce:
      require_nonnull(a.send, "sendbuf");
      require_nonnull(a.recv, "recvbuf");
      if (a.send != a.recv && overlaps(a.send, a.count * esize, a.recv, a.count * esize))
        fail(ZRT_ERR_INVALID_ARGUMENT, "sendbuf and recvbuf overlap but are not equal (in place)");
      if (a.count > static_cast<size_t>(INT_MAX))
        fail(ZRT_ERR_NOT_SUPPORTED, "count {} exceeds INT_MAX, the limit of backend {}", a.count,
             backend_->name());
      break;
    case CollKind::Broadcast:
      require_nonnull(a.recv, "buf");
      if (a.root < 0 || a.root >= size_)
        fail(ZRT_ERR_INVALID_ARGUMENT, "root is {}: accepted values are 0 .. {}", a.root,
             size_ - 1);
      if (a.count > static_cast<size_t>(INT_MAX))
        fail(ZRT_ERR_NOT_SUPPORTED, "count {} exceeds INT_MAX, the limit of backend {}", a.count,
             backend_->name());
      break;
  }
  if ((a.send != nullptr && !aligned(a.send)) || !aligned(a.recv))
    fail(ZRT_ERR_INVALID_ARGUMENT, "buffers must be aligned to the {}-byte {} element", esize,
         dtype_name(a.dtype));
}

// A check whose signature is kPoison tells every rank that some rank rejected its
// arguments: they all fail the collective instead of waiting for that rank forever.
constexpr int64_t kPoison = INT64_MAX;

void Communicator::post_check(Request &r, bool poison) {
  int64_t sig = poison ? kPoison : signature(r.args_);
  int64_t count = static_cast<int64_t>(r.args_.count);
  int64_t *v = r.check_values_;
  v[0] = sig;
  v[1] = -sig;
  v[2] = count;
  v[3] = -count;
  int rc = MPI_Iallreduce(MPI_IN_PLACE, v, 4, MPI_INT64_T, MPI_MAX, check_comm_, &r.check_request_);
  if (rc != MPI_SUCCESS) {
    r.fail(ZRT_ERR_MPI, fmt::format("{}: MPI_Iallreduce (argument check) failed: {}",
                                    r.args_.describe(), mpi_error_string(rc)));
    return;
  }
  r.phase_ = Request::Phase::Checking;
  unstarted_.push_back(&r);
}

std::unique_ptr<Request> Communicator::post(CollArgs args) {
  std::lock_guard lock(mutex_);
  args.seq = next_seq_;
  try {
    validate(args);
  } catch (const Error &) {
    if (check_args_) {
      ++next_seq_;
      auto orphan = std::make_unique<Request>(*this, args);
      orphan->orphan_ = true;
      post_check(*orphan, true);
      if (!orphan->finished()) orphans_.push_back(std::move(orphan));
    }
    throw;
  }
  ++next_seq_;
  auto request = std::make_unique<Request>(*this, args);
  ++live_requests_;
  if (check_args_) {
    post_check(*request, false);
  } else if (unstarted_.empty()) {
    start(*request);
  } else {
    unstarted_.push_back(request.get());
  }
  return request;
}

void Communicator::drop_orphan(Request &r) {
  auto it =
      std::find_if(orphans_.begin(), orphans_.end(), [&](const auto &p) { return p.get() == &r; });
  if (it != orphans_.end()) orphans_.erase(it);
}

void Communicator::finish_check(Request &r) {
  const int64_t *v = r.check_values_;
  int64_t max_sig = v[0], min_sig = -v[1], max_count = v[2], min_count = -v[3];
  if (r.orphan_) {
    r.fail(ZRT_ERR_INVALID_ARGUMENT, "rejected on this rank");
    return;
  }
  if (max_sig == kPoison) {
    r.fail(ZRT_ERR_REMOTE,
           fmt::format("{} on rank {}: another rank rejected its arguments for this collective "
                       "(its error message names them)",
                       r.args_.describe(), rank_));
    return;
  }
  if (max_sig == min_sig && max_count == min_count) {
    r.phase_ = Request::Phase::Ready;
    return;
  }
  std::string what =
      max_count != min_count
          ? fmt::format("counts differ across ranks: from {} to {}", min_count, max_count)
          : std::string("the collective, dtype, op or root differs across ranks");
  r.fail(ZRT_ERR_MISMATCH,
         fmt::format("{} on rank {}: {}; every rank must post the same collectives in the "
                     "same order with the same arguments",
                     r.args_.describe(), rank_, what));
}

void Communicator::start(Request &r) {
  try {
    r.op_ = backend_->start(r.args_);
    r.phase_ = Request::Phase::Running;
    running_.push_back(&r);
  } catch (const Error &e) {
    r.fail(e.status(), fmt::format("{}: {}", r.args_.describe(), e.what()));
  }
}

void Communicator::progress() {
  std::lock_guard lock(mutex_);
  // Start requests strictly in sequence order.
  while (!unstarted_.empty()) {
    Request &r = *unstarted_.front();
    if (r.phase_ == Request::Phase::Checking) {
      int done = 0;
      int rc = MPI_Test(&r.check_request_, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) {
        r.fail(ZRT_ERR_MPI, fmt::format("{}: argument check failed: {}", r.args_.describe(),
                                        mpi_error_string(rc)));
        unstarted_.pop_front();
        if (r.orphan_) drop_orphan(r);
        continue;
      }
      if (!done) break;
      finish_check(r);
    }
    if (r.phase_ == Request::Phase::Ready) start(r);
    unstarted_.pop_front();
    if (r.orphan_) drop_orphan(r);
  }
  // Step everything running; each op is a state machine that never blocks.
  for (size_t i = 0; i < running_.size();) {
    Request &r = *running_[i];
    bool done = false;
    try {
      done = r.op_->step();
      if (done) {
        r.phase_ = Request::Phase::Done;
        r.op_.reset();
      }
    } catch (const Error &e) {
      r.fail(e.status(), fmt::format("{}: {}", r.args_.describe(), e.what()));
      done = true;
    }
    if (done) {
      running_[i] = running_.back();
      running_.pop_back();
    } else {
      ++i;
    }
  }
}

}  // namespace zrt
