#include "timing.hpp"

#include <fmt/format.h>
#include <zerort/zerort.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Timing time_collective(MPI_Comm comm, const TimingPolicy &policy, const std::function<void()> &fn) {
  fn();  // warm-up: first-touch of buffers, connection setup
  std::vector<double> samples;
  double total = 0;
  while (static_cast<int>(samples.size()) < policy.min_iters ||
         (total < policy.seconds && static_cast<int>(samples.size()) < policy.max_iters)) {
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    fn();
    double dt = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, comm);
    samples.push_back(dt);
    total += dt;
  }
  std::sort(samples.begin(), samples.end());
  Timing t;
  t.samples = static_cast<int>(samples.size());
  t.min = samples.front();
  t.median = samples[samples.size() / 2];
  return t;
}

std::string format_bytes(size_t bytes) {
  char text[32];
  size_t length = 0;
  if (zrt_format_bytes(bytes, text, sizeof text, &length) != ZRT_SUCCESS)
    return std::to_string(bytes) + " B";
  return text;
}

bool parse_bytes(const std::string &text, size_t *bytes) {
  char *end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return false;
  std::string suffix(end);
  for (char &c : suffix)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  size_t scale = 1;
  if (suffix == "K" || suffix == "KB" || suffix == "KIB")
    scale = size_t{1} << 10;
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB")
    scale = size_t{1} << 20;
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB")
    scale = size_t{1} << 30;
  else if (!suffix.empty())
    return false;
  *bytes = static_cast<size_t>(v) * scale;
  return true;
}
