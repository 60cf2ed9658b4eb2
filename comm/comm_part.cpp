#include "comm/comm_part.hpp"

#include "comm/communicator.hpp"

namespace zrt {

namespace {
const bool registered =
    register_context_part(20, [](Context &context) { return std::make_unique<CommPart>(context); });
}  // namespace

CommPart::CommPart(Context &context) : context_(context) {
  (void)registered;
  Communicator::Options options;
  options.backend = context.config().get_string("comm.backend");
  options.deterministic = context.config().get_bool("comm.deterministic");
  auto world = std::make_unique<Communicator>(context, context.comm(), options, true);
  Communicator *raw = world.get();
  world_ = raw->handle = comm_table().insert(std::move(world));
}

CommPart::~CommPart() {
  for (uintptr_t c : comms_)
    comm_table().remove(c, "communicator");
  comm_table().remove(world_, "communicator");
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
  out["comm"] = {{"backends", backend_names()},
                 {"world_backend", world.backend_name()},
                 {"check_args", world.check_args()},
                 {"deterministic", world.deterministic()},
                 {"communicators", comms_.size() + 1}};
}

}  // namespace zrt
