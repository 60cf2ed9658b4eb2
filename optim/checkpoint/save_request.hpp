// The request of a background checkpoint save (zrt_checkpoint_save_post): a zrt_request_h
// like a collective's (runtime/async_request.hpp), tested, waited for and freed with the
// same calls. Testing or waiting settles the save through its engine (Engine::settle_save:
// collective while the save is in flight, it may publish the file); the engine is held by
// handle, since the program may destroy it first, which settles the save.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "optim/checkpoint/background_save.hpp"
#include "runtime/async_request.hpp"
#include "runtime/error.hpp"

namespace zrt::checkpoint {

class SaveRequest final : public AsyncRequest {
 public:
  SaveRequest(std::shared_ptr<BackgroundSave> save, uintptr_t engine)
      : save_(std::move(save)), engine_(engine) {}

  zrt_status_t test() override { return advance(false); }
  zrt_status_t wait() override { return advance(true); }
  bool finished() const override { return failure_.has_value() || save_->ended(); }
  std::string describe() const override { return "the checkpoint save of " + save_->path(); }

 private:
  zrt_status_t advance(bool wait);

  std::shared_ptr<BackgroundSave> save_;
  uintptr_t engine_;
  // A failure of the settling itself (an agreement that timed out), reported again on
  // every later call as the save's own failure is.
  std::optional<Error> failure_;
};

}  // namespace zrt::checkpoint
