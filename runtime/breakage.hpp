// Whether the ranks of a context are still in step.
//
// Once an agreement or a collective of a context timed out, or MPI failed inside one, some
// rank may be stopped, dead, or inside a collective that will never complete. From then on
// nothing of the context may wait for its peers again: later agreements fail at once with
// the first reason, and teardown (zrt_engine_destroy, zrt_comm_destroy, zrt_finalize)
// releases what is local and gives up what is collective - MPI windows, UCX workers,
// communicators, files open with MPI-IO are abandoned, not freed - so that the program
// reaches its MPI_Abort and the job ends on every rank.
//
// One Breakage per context, shared by the agreement watches and communicators made for
// it (runtime/agreement_watch.hpp, comm/communicator.hpp); thread-safe.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "zerort/status.h"

namespace zrt {

class Breakage {
 public:
  // Marks the context broken; the first reason is kept. Never throws.
  void mark(zrt_status_t status, const std::string &why) noexcept;
  bool broken() const noexcept { return broken_.load(std::memory_order_acquire); }
  // The first reason ("" while not broken) and its status (ZRT_SUCCESS while not broken).
  std::string why() const;
  zrt_status_t status() const;
  // Throws Error(status(), "<what> not attempted: the job is broken: <why>") when broken.
  void check(const char *what) const;

 private:
  std::atomic<bool> broken_{false};
  mutable std::mutex mutex_;
  zrt_status_t status_ = ZRT_SUCCESS;
  std::string why_;
};

}  // namespace zrt
