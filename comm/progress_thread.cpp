#include "comm/progress_thread.hpp"

#include <hwloc.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "comm/communicator.hpp"
#include "runtime/log.hpp"
#include "runtime/topology.hpp"

namespace zrt {

namespace {

// Watch mode: a watchdog grace period is at least 0.2 s, so a few polls fit in it.
constexpr auto kWatchPeriod = std::chrono::milliseconds(50);
// Drive mode with nothing in flight.
constexpr auto kIdleNap = std::chrono::microseconds(200);

}  // namespace

ProgressThread::ProgressThread(const Topology &topology, Mode mode) : mode_(mode) {
  thread_ = std::thread([this] { run(); });
  // Bound from here, so binding_ is settled before anyone reads it.
  binding_ = "unbound (no hwloc topology)";
  hwloc_topology_t topo = topology.hwloc();
  if (topo == nullptr || topology.bound_set() == nullptr) return;
  int last = hwloc_bitmap_last(topology.bound_set());
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (last >= 0 && set != nullptr) {
    hwloc_bitmap_only(set, static_cast<unsigned>(last));
    if (hwloc_set_thread_cpubind(topo, thread_.native_handle(), set, 0) == 0)
      binding_ = "PU " + std::to_string(last);
    else
      binding_ = "unbound (hwloc_set_thread_cpubind failed)";
  }
  if (set != nullptr) hwloc_bitmap_free(set);
  log::debug("progress thread ({} mode) bound to {}", mode_ == Mode::Drive ? "drive" : "watch",
             binding_);
}

ProgressThread::~ProgressThread() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ProgressThread::add(Communicator *comm) {
  std::lock_guard lock(mutex_);
  comms_.push_back(comm);
}

void ProgressThread::remove(Communicator *comm) {
  std::lock_guard lock(mutex_);
  comms_.erase(std::remove(comms_.begin(), comms_.end(), comm), comms_.end());
}

void ProgressThread::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    bool busy = false;
    for (Communicator *c : comms_)
      busy |= mode_ == Mode::Drive ? c->progress_from_thread() : c->watch_from_thread();
    if (mode_ == Mode::Watch) {
      wake_.wait_for(lock, kWatchPeriod, [this] { return stop_; });
    } else if (busy) {
      lock.unlock();
      sched_yield();  // an oversubscribed node runs the ranks in between
      lock.lock();
    } else {
      wake_.wait_for(lock, kIdleNap, [this] { return stop_; });
    }
  }
}

}  // namespace zrt
