// A checkpoint save of an engine still writing in the background (zrt_checkpoint_save_async,
// optim/checkpoint/background_save.hpp). The engine settles it at its next calls, so that a
// failure is reported on every rank at the same call and a later save or load never
// overlaps it.
#pragma once

namespace zrt {

class PendingSave {
 public:
  virtual ~PendingSave() = default;
  // Collective over the engine's ranks. Publishes the checkpoint once every rank's writes
  // are done and returns true; returns false while some rank's are still running (wait:
  // waits until none is). Throws the save's failure on every rank, once, after removing
  // the unfinished file: the previous checkpoint is kept.
  virtual bool settle(bool wait) = 0;
  // Local: returns once the save no longer reads the engine's state (an asynchronous save
  // copies it in the background; anything that changes the state waits for this first).
  virtual void wait_for_snapshot() = 0;
  // Local: stops this rank's writes and leaves the file unpublished, for an engine that
  // goes away without its ranks (an agreement that timed out).
  virtual void abandon() = 0;
};

}  // namespace zrt
