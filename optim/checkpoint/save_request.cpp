#include "optim/checkpoint/save_request.hpp"

#include "optim/engine_part.hpp"
#include "optim/zero_engine.hpp"

namespace zrt::checkpoint {

zrt_status_t SaveRequest::advance(bool wait) {
  if (failure_) throw *failure_;
  if (!save_->ended()) {
    try {
      engine_table().get(engine_, "engine").settle_save(wait);
    } catch (const Error &e) {
      failure_ = e;
      throw;
    }
  }
  if (!save_->ended()) return ZRT_IN_PROGRESS;
  if (save_->status() != ZRT_SUCCESS) throw Error(save_->status(), save_->message());
  return ZRT_SUCCESS;
}

}  // namespace zrt::checkpoint
