#include "comm/communicator.hpp"

#include <algorithm>

#include "comm/validate_args.hpp"
#include "runtime/agree.hpp"
#include "runtime/graveyard.hpp"
#include "runtime/log.hpp"
#include "runtime/mpi_error.hpp"
#include "runtime/runtime_context.hpp"

namespace zrt {

Communicator::Communicator(Context &context, MPI_Comm user_comm, const Options &options, bool world)
    : context_(context),
      world_(world),
      deterministic_(options.deterministic),
      breaks_context_(options.breaks_context) {
  if (user_comm == MPI_COMM_NULL) fail(ZRT_ERR_INVALID_ARGUMENT, "mpi_comm is MPI_COMM_NULL");
  int inter = 0;
  check_mpi(MPI_Comm_test_inter(user_comm, &inter), "MPI_Comm_test_inter(mpi_comm)");
  if (inter) fail(ZRT_ERR_INVALID_ARGUMENT, "mpi_comm is an inter-communicator");
  if (!(options.timeout >= 0))
    fail(ZRT_ERR_INVALID_ARGUMENT, "timeout is {}: it must be >= 0 seconds (0: no watchdog)",
         options.timeout);
  // On a throw the members go in reverse order: backends before the communicators.
  comm_ = MpiComm::dup(user_comm);
  // The set-up below (node grouping, shared windows, backend start) agrees on comm_.
  agree_watch_ = std::make_unique<AgreementWatch>(
      comm_, options.timeout, options.breaks_context ? context.shared_breakage() : nullptr);
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
  // (unless the watchdog has failed the communicator or the context is broken: then they
  // may never finish).
  while (!orphans_.empty() && failure_.empty() && !context_.breakage().broken())
    progress();
  if (!orphans_.empty() && failure_.empty())
    fail_all(WatchVerdict{next_seq_, context_.breakage().why()});
  orphans_.clear();
  // After a timeout, MPI may still be running the abandoned collectives: it must keep their
  // communicators (Open MPI crashes progressing one whose communicator was freed) and the
  // private memory they may write into, so those are left for MPI_Finalize. The same when
  // the context is broken elsewhere: the backends' collective frees (shared windows, UCX
  // workers) would wait for ranks that may never come.
  bool keep = !failure_.empty() || agree_watch_->given_up() || context_.breakage().broken();
  if (!keep && agreed_ && size_ > 1) {
    try {
      watched_barrier(comm_, "barrier before freeing the communicator's backends");
    } catch (const Error &) {
      keep = true;  // timed out: the context is broken now, and says why
    }
  }
  if (keep) {
    bury(std::move(watchdog_));  // its messages to gone ranks are not waited for
    backends_->abandoned();
  }
  watchdog_.reset();
  backends_.reset();  // before the MPI communicators and the memory they use
  if (keep) {
    memory_->abandon();
    check_comm_.abandon();
    comm_.abandon();
  }
  agree_watch_.reset();
  // Otherwise the members free them now: memory_, then the communicators.
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

std::unique_ptr<Request> Communicator::post(CollArgs args) {
  std::lock_guard lock(mutex_);
  args.seq = next_seq_;
  // A verdict a peer has already sent must win over this collective, which could otherwise
  // complete against the late half of the one the peers abandoned (without the argument
  // check it goes straight to the backend): look for one now, whenever the last look was.
  last_watch_ = 0;
  watch_locked();
  // Ranks out of step elsewhere in the context (an engine's agreement timed out, say):
  // nothing new may wait for them.
  if (failure_.empty() && context_.breakage().broken())
    fail_all(WatchVerdict{next_seq_, context_.breakage().why()});
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
      auto orphan = std::make_unique<Request>(*this, args, Request::Orphan{});
      orphan->post_check(check_comm_);
      if (!orphan->finished()) {
        unstarted_.push_back(orphan.get());
        orphans_.push_back(std::move(orphan));
      }
    }
    throw;
  }
  ++next_seq_;
  agreed_ = true;  // every rank posts the same collectives, so every rank has it
  auto request = std::make_unique<Request>(*this, args, *backend, index);
  ++live_requests_;
  if (check_args_) {
    request->post_check(check_comm_);
    if (!request->finished()) unstarted_.push_back(request.get());
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

void Communicator::start(Request &r) {
  r.start();
  if (r.phase() == Request::Phase::Running) running_.push_back(&r);
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
    if (r.phase() == Request::Phase::Checking && !r.checked()) break;
    if (r.phase() == Request::Phase::Ready) start(r);
    unstarted_.pop_front();
    if (r.orphan()) drop_orphan(r);
  }
  // Step everything running; each op is a state machine that never blocks.
  for (size_t i = 0; i < running_.size();) {
    if (running_[i]->step()) {
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
    if (oldest == nullptr || r->args().seq < oldest->args().seq) oldest = r;
  Watchdog::Oldest what;
  if (oldest != nullptr) {
    what.seq = oldest->args().seq;
    what.posted_at = oldest->posted_at();
    what.what = oldest->args().describe_with_bytes();
  }
  std::optional<WatchVerdict> verdict =
      watchdog_->poll(now, oldest != nullptr ? &what : nullptr, next_seq_,
                      oldest != nullptr ? oldest->backend_name() : "none");
  if (verdict) fail_all(*verdict);
}

void Communicator::give_up(const std::string &why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure_.empty()) return;
  fail_all(WatchVerdict{next_seq_, why});
}

void Communicator::fail_all(const WatchVerdict &verdict) {
  failure_ = verdict.message;
  if (breaks_context_) context_.breakage().mark(ZRT_ERR_TIMEOUT, verdict.message);
  log::error("{}", verdict.message);
  auto message_for = [&](const Request &r) {
    return r.args().seq == verdict.seq ? verdict.message
                                       : fmt::format("{}: abandoned, the communicator failed: {}",
                                                     r.args().describe(), verdict.message);
  };
  for (Request *r : unstarted_)
    r->abandon(message_for(*r));
  for (Request *r : running_)
    r->abandon(message_for(*r));
  unstarted_.clear();
  running_.clear();
  orphans_.clear();
}

}  // namespace zrt
