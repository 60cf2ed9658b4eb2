#include "comm/comm_part.hpp"

#include "comm/comm_handles.hpp"

#include "runtime/log.hpp"

namespace zrt {

namespace {
const bool registered =
    register_context_part(20, [](Context &context) { return std::make_unique<CommPart>(context); });
}  // namespace

CommPart::CommPart(Context &context) : context_(context) {
  (void)registered;
  Communicator::Options options = default_options();
  const bool drive = context.config().get_bool("comm.progress_thread");
  if (drive || options.timeout > 0) {
    if (context.mpi_thread_level() == MPI_THREAD_MULTIPLE) {
      thread_ = std::make_unique<ProgressThread>(
          context.topology(), drive ? ProgressThread::Mode::Drive : ProgressThread::Mode::Watch);
    } else {
      thread_missing_ =
          "MPI was initialized without MPI_THREAD_MULTIPLE: collectives progress, and the "
          "watchdog runs, inside zrt_request_test/wait only";
      if (drive && context.rank() == 0) log::warn("comm.progress_thread: {}", thread_missing_);
    }
  }
  auto world = std::make_unique<Communicator>(context, context.comm(), options, true);
  Communicator *raw = world.get();
  world_ = raw->handle = comm_table().insert(std::move(world));
  if (thread_) thread_->add(raw);
}

CommPart::~CommPart() {
  // The thread lets go of every communicator before any is destroyed.
  thread_.reset();
  for (uintptr_t c : comms_)
    comm_table().remove(c, "communicator");
  comm_table().remove(world_, "communicator");
}

Communicator::Options CommPart::default_options() const {
  Communicator::Options options;
  options.backend = context_.config().get_string("comm.backend");
  options.deterministic = context_.config().get_bool("comm.deterministic");
  options.timeout = context_.config().get_double("comm.timeout");
  if (options.timeout < 0 || options.timeout > 1e9)
    fail(ZRT_ERR_CONFIG,
         "bad value {} for comm.timeout (from {}): accepted values are 0 (no watchdog) to 1e9 "
         "seconds",
         options.timeout, source_name(context_.config().source("comm.timeout")));
  return options;
}

void CommPart::adopt(uintptr_t comm) {
  comms_.insert(comm);
  if (thread_) thread_->add(&comm_table().get(comm, "communicator"));
}

void CommPart::forget(uintptr_t comm) {
  if (thread_) thread_->remove(&comm_table().get(comm, "communicator"));
  comms_.erase(comm);
}

void CommPart::check_can_finalize() const {
  auto check = [](uintptr_t handle) {
    const Communicator &c = comm_table().get(handle, "communicator");
    if (c.live_requests() > 0)
      fail(ZRT_ERR_INVALID_STATE,
           "{} request(s) on a communicator of {} ranks are not freed; wait for and free every "
           "request first",
           c.live_requests(), c.size());
  };
  check(world_);
  for (uintptr_t c : comms_)
    check(c);
}

void CommPart::describe(nlohmann::json &out) const {
  const Communicator &world = comm_table().get(world_, "communicator");
  nlohmann::json w;
  world.describe(w);
  nlohmann::json thread = nullptr;
  if (thread_)
    thread = {{"mode", thread_->mode() == ProgressThread::Mode::Drive ? "drive" : "watch"},
              {"binding", thread_->binding()}};
  out["comm"] = {{"backends", backend_names()},
                 {"world_backend", world.backend_name()},
                 {"world", w},
                 {"check_args", world.check_args()},
                 {"deterministic", world.deterministic()},
                 {"timeout", world.timeout()},
                 {"thread", thread},
                 {"communicators", comms_.size() + 1}};
  if (!thread_missing_.empty()) out["comm"]["thread_missing"] = thread_missing_;
}

}  // namespace zrt
