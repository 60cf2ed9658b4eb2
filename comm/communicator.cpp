#include "comm/communicator.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include "comm/dtype.hpp"
#include "comm/graveyard.hpp"
#include "comm/validate_args.hpp"
#include "runtime/agree.hpp"
#include "runtime/context.hpp"
#include "runtime/log.hpp"
#include "runtime/mpi_error.hpp"

namespace zrt {

namespace {

// A signature of everything the ranks must agree on, folded into 62 bits so that it and
// its negation fit an int64 (one MPI_MAX all-reduce then yields both min and max).
int64_t signature(const CollArgs &a, int backend) {
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
  mix(static_cast<uint64_t>(backend));
  return static_cast<int64_t>(h >> 2);
}

}  // namespace

Communicator::Communicator(Context &context, MPI_Comm user_comm, const Options &options, bool world)
    : context_(context), world_(world), deterministic_(options.deterministic) {
  if (user_comm == MPI_COMM_NULL) fail(ZRT_ERR_INVALID_ARGUMENT, "mpi_comm is MPI_COMM_NULL");
  int inter = 0;
  check_mpi(MPI_Comm_test_inter(user_comm, &inter), "MPI_Comm_test_inter(mpi_comm)");
  if (inter) fail(ZRT_ERR_INVALID_ARGUMENT, "mpi_comm is an inter-communicator");
  if (!(options.timeout >= 0))
    fail(ZRT_ERR_INVALID_ARGUMENT, "timeout is {}: it must be >= 0 seconds (0: no watchdog)",
         options.timeout);
  // On a throw the members go in reverse order: backends before the communicators.
  comm_ = MpiComm::dup(user_comm);
  check_comm_ = MpiComm::dup(comm_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  check_args_ = context.config().get_bool("comm.check_args");
  BackendGroup group;
  group.context = &context;
  group.comm = comm_;
  group.rank = rank_;
  group.size = size_;
  group.deterministic = deterministic_;
  backends_ = std::make_unique<BackendSet>(group, options.backend);
  CommMemory::Hooks hooks;
  hooks.usable = [this] {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_.empty()) fail(ZRT_ERR_TIMEOUT, "this communicator failed earlier: {}", failure_);
  };
  hooks.progress = [this] { progress(); };
  memory_ = std::make_unique<CommMemory>(comm_, backends_->shared_buffers(), std::move(hooks));
  if (options.timeout > 0) watchdog_ = std::make_unique<Watchdog>(comm_, options.timeout);
  log::debug("communicator of {} ranks; large host buffers go to backend {}", size_,
             backends_->primary());
}

Communicator::~Communicator() {
  // Rejected posts' checks still involve the other ranks: finish them before freeing
  // (unless the watchdog has failed the communicator: then they may never finish).
  while (!orphans_.empty() && failure_.empty())
    progress();
  orphans_.clear();
  watchdog_.reset();
  // After a timeout, MPI may still be running the abandoned collectives: it must keep their
  // communicators (Open MPI crashes progressing one whose communicator was freed), so they
  // are left for MPI_Finalize.
  const bool keep = !failure_.empty();
  if (keep) backends_->abandoned();
  backends_.reset();  // before the MPI communicators and the memory they use
  // An abandoned MPI collective may still use these (and write into private memory): then
  // they are left for MPI_Finalize. Otherwise the members free them: memory_, then the
  // communicators.
  if (keep) {
    memory_->abandon();
    check_comm_.abandon();
    comm_.abandon();
  }
}

void Communicator::describe(nlohmann::json &out) const {
  nlohmann::json choice;
  backends_->describe(choice);
  out = {{"size", size_},
         {"backend", choice},
         {"check_args", check_args_},
         {"deterministic", deterministic_},
         {"timeout", timeout()}};
}

// A check whose signature is kPoison tells every rank that some rank rejected its
// arguments: they all fail the collective instead of waiting for that rank forever.
constexpr int64_t kPoison = INT64_MAX;

void Communicator::post_check(Request &r, bool poison) {
  int64_t sig = poison ? kPoison : signature(r.args_, r.backend_index_);
  int64_t count = static_cast<int64_t>(r.args_.count);
  int64_t backend = r.backend_index_;
  int64_t *v = r.check_values();
  v[0] = sig;
  v[1] = -sig;
  v[2] = count;
  v[3] = -count;
  v[4] = backend;
  v[5] = -backend;
  int rc = MPI_Iallreduce(MPI_IN_PLACE, v, 6, MPI_INT64_T, MPI_MAX, check_comm_, &r.check_request_);
  if (rc != MPI_SUCCESS) {
    r.fail(ZRT_ERR_MPI, fmt::format("{}: MPI_Iallreduce (argument check) failed: {}",
                                    r.args_.describe(), mpi_error_string(rc)));
    return;
  }
  r.set_phase(Request::Phase::Checking);
  unstarted_.push_back(&r);
}

std::unique_ptr<Request> Communicator::post(CollArgs args) {
  std::lock_guard lock(mutex_);
  args.seq = next_seq_;
  // A verdict a peer has already sent must win over this collective, which could otherwise
  // complete against the late half of the one the peers abandoned (without the argument
  // check it goes straight to the backend): look for one now, whenever the last look was.
  last_watch_ = 0;
  watch_locked();
  Backend *backend = nullptr;
  int index = 0;
  try {
    if (!failure_.empty())
      fail(ZRT_ERR_TIMEOUT, "{}: this communicator failed earlier: {}", args.describe(), failure_);
    validate_args(args, size_, rank_);
    MemoryKind memory = MemoryKind::Host;
    if (args.count > 0) {
      memory = memory_kind(args.recv);
      if (args.send != nullptr && memory_kind(args.send) != memory)
        fail(ZRT_ERR_INVALID_ARGUMENT, "sendbuf is {} but recvbuf is {}; they must be alike",
             memory_kind_name(memory_kind(args.send)), memory_kind_name(memory));
    }
    backend = &backends_->choose(args, memory, &index);
    backend->check(args);
  } catch (const Error &) {
    // Tell the others, whose check would wait for this rank forever. A failed
    // communicator is past that: its peers do not wait for checks any more.
    if (check_args_ && failure_.empty()) {
      ++next_seq_;
      auto orphan = std::make_unique<Request>(*this, args);
      orphan->orphan_ = true;
      orphan->posted_at_ = Watchdog::now();
      post_check(*orphan, true);
      if (!orphan->finished()) orphans_.push_back(std::move(orphan));
    }
    throw;
  }
  ++next_seq_;
  auto request = std::make_unique<Request>(*this, args);
  request->backend_ = backend;
  request->backend_index_ = index;
  request->posted_at_ = Watchdog::now();
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
  const int64_t *v = r.check_values();
  int64_t max_sig = v[0], min_sig = -v[1], max_count = v[2], min_count = -v[3];
  int64_t max_backend = v[4], min_backend = -v[5];
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
    r.set_phase(Request::Phase::Ready);
    return;
  }
  std::string what;
  if (max_count != min_count)
    what = fmt::format("counts differ across ranks: from {} to {}", min_count, max_count);
  else if (max_backend != min_backend)
    what =
        "the ranks chose different backends for it: are the buffers in host memory on some "
        "ranks and in device memory on others?";
  else
    what = "the collective, dtype, op or root differs across ranks";
  r.fail(ZRT_ERR_MISMATCH,
         fmt::format("{} on rank {}: {}; every rank must post the same collectives in the "
                     "same order with the same arguments",
                     r.args_.describe(), rank_, what));
}

void Communicator::start(Request &r) {
  try {
    r.op_ = r.backend_->start(r.args_);
    r.set_phase(Request::Phase::Running);
    running_.push_back(&r);
  } catch (const Error &e) {
    r.fail(e.status(), fmt::format("{}: {}", r.args_.describe(), e.what()));
  }
}

void Communicator::progress() {
  std::lock_guard lock(mutex_);
  progress_locked();
}

bool Communicator::progress_from_thread() {
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return true;  // the program is progressing it now
  progress_locked();
  return !unstarted_.empty() || !running_.empty();
}

bool Communicator::watch_from_thread() {
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (lock.owns_lock()) watch_locked();
  return false;
}

void Communicator::progress_locked() {
  // Start requests strictly in sequence order.
  while (!unstarted_.empty()) {
    Request &r = *unstarted_.front();
    if (r.phase() == Request::Phase::Checking) {
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
    if (r.phase() == Request::Phase::Ready) start(r);
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
        r.op_.reset();
        r.set_phase(Request::Phase::Done);
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
  watch_locked();
}

void Communicator::watch_locked() {
  if (!watchdog_) return;
  // The watchdog's MPI_Test runs MPI's whole progress engine (sockets included): a tight
  // wait loop calls it at most every millisecond, which is plenty for a timeout in seconds.
  const double now = Watchdog::now();
  if (now - last_watch_ < 1e-3) return;
  last_watch_ = now;
  // The oldest unfinished collective: the front of the start queue, or a running one.
  const Request *oldest = unstarted_.empty() ? nullptr : unstarted_.front();
  for (const Request *r : running_)
    if (oldest == nullptr || r->args_.seq < oldest->args_.seq) oldest = r;
  Watchdog::Oldest what;
  if (oldest != nullptr) {
    what.seq = oldest->args_.seq;
    what.posted_at = oldest->posted_at_;
    what.what = oldest->args_.describe_with_bytes();
  }
  std::optional<WatchVerdict> verdict = watchdog_->poll(
      now, oldest != nullptr ? &what : nullptr, next_seq_,
      oldest != nullptr && oldest->backend_ != nullptr ? oldest->backend_->name() : "none");
  if (verdict) fail_all(*verdict);
}

void Communicator::fail_all(const WatchVerdict &verdict) {
  failure_ = verdict.message;
  log::error("{}", verdict.message);
  auto message_for = [&](const Request &r) {
    return r.args_.seq == verdict.seq ? verdict.message
                                      : fmt::format("{}: abandoned, the communicator failed: {}",
                                                    r.args_.describe(), verdict.message);
  };
  // Argument checks and operations in flight may never complete, and MPI may write into
  // their buffers until it finalizes: they are buried, not freed.
  for (Request *r : unstarted_) {
    if (r->phase() == Request::Phase::Checking) {
      r->check_request_ = MPI_REQUEST_NULL;
      bury(std::move(r->check_storage_));
    }
    r->fail(ZRT_ERR_TIMEOUT, message_for(*r));
  }
  for (Request *r : running_) {
    r->op_->abandon();
    bury(std::move(r->op_));
    r->fail(ZRT_ERR_TIMEOUT, message_for(*r));
  }
  unstarted_.clear();
  running_.clear();
  orphans_.clear();
}

}  // namespace zrt
