// What the engine's collectives cost between two step reports: the time the program's
// thread blocked on them (the exposed communication: a reduction that finished behind
// backward costs nothing here) and the bytes each kind carried.
#pragma once

#include <chrono>
#include <cstdint>

#include "comm/coll_args.hpp"
#include "comm/dtype.hpp"

namespace zrt {

struct CommStats {
  double wait_seconds = 0;
  // Each collective's whole vector (count elements of its dtype), as DeepSpeed's comms
  // logger sizes a message.
  uint64_t reduce_scatter_bytes = 0, all_gather_bytes = 0, all_reduce_bytes = 0;
  uint64_t collectives = 0;

  void posted(const CollArgs &a) {
    const uint64_t bytes = uint64_t{a.count} * dtype_size(a.dtype);
    ++collectives;
    switch (a.kind) {
      case CollKind::ReduceScatter:
        reduce_scatter_bytes += bytes;
        break;
      case CollKind::AllGather:
        all_gather_bytes += bytes;
        break;
      case CollKind::AllReduce:
        all_reduce_bytes += bytes;
        break;
      case CollKind::Broadcast:
        break;
    }
  }
  // The figures so far, and a fresh count from here.
  CommStats take() {
    CommStats out = *this;
    *this = CommStats{};
    return out;
  }

  // Adds the time from its construction to its destruction to wait_seconds.
  class Timer {
   public:
    explicit Timer(CommStats &stats) : stats_(stats), start_(std::chrono::steady_clock::now()) {}
    ~Timer() {
      stats_.wait_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }
    Timer(const Timer &) = delete;
    Timer &operator=(const Timer &) = delete;

   private:
    CommStats &stats_;
    std::chrono::steady_clock::time_point start_;
  };
};

}  // namespace zrt
