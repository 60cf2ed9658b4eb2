// Settings that every rank must resolve alike, compared across ranks.
//
// The environment wins over the file and the program (runtime/config.hpp), and a job's
// environment is per process: a launcher or a wrapper script can give one rank
// ZRT_COMM_BACKEND=shm and another mpi, or ZRT_FP16=1 to one rank only. Ranks that resolve
// different backends, dtypes, stages or bucket sizes then walk into different collectives
// and hang. zrt_init and zrt_engine_create compare what they resolved: rank 0's settings
// are broadcast only when a hash differs, and every rank then fails with the first key that
// differs, its value here and its value on rank 0. Keys that may differ per rank (log
// level, binding, pool sizes) are marked per_rank in config_keys.cpp.
#pragma once

#include <mpi.h>

#include <string>
#include <utility>
#include <vector>

namespace zrt {

struct Setting {
  std::string name;    // the configuration key, e.g. "comm.backend"
  std::string value;   // as text
  std::string source;  // where it came from ("environment", "file /x.json", ...)
};

// Collective over comm (under its agreement watch). Throws Error(ZRT_ERR_MISMATCH) on every
// rank when some rank's settings differ from rank 0's: "rank R: comm.backend is 'mpi' here
// (environment) but 'shm' on rank 0", for the lowest such rank. what names the settings
// ("the context's settings").
void check_same_settings(MPI_Comm comm, const std::vector<Setting> &settings, const char *what);

}  // namespace zrt
