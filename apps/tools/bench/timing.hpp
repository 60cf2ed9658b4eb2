// Timing for zrt-bench: each sample is the slowest rank's time for one call, so every
// rank sees the same samples and leaves the loop together.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

struct TimingPolicy {
  int min_iters = 3;
  int max_iters = 100;
  double seconds = 0.3;  // stop sampling after this much measured time
};

struct Timing {
  double median = 0;
  double min = 0;
  int samples = 0;
};

// Seconds on a monotonic clock (steady_clock), for timing one rank's own work.
double wall_seconds();

// Collective over comm: one warm-up call, then samples until the policy is met.
Timing time_collective(MPI_Comm comm, const TimingPolicy &policy, const std::function<void()> &fn);

// "1 KiB", "64 MiB": zerort's own wording (zrt_format_bytes)
std::string format_bytes(size_t bytes);
// Parses "1K", "256M", "4096"; returns false on garbage.
bool parse_bytes(const std::string &text, size_t *bytes);
