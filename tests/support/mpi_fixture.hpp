// Shared by the MPI test binaries: one zerort context for the whole process, created in
// main after MPI_Init, and helpers that keep ranks in step.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>
#include <zerort/zerort.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "../device_required.hpp"

namespace test {

zrt_context_h context();
zrt_comm_h world();
int rank();
int size();

inline std::string last_error() {
  return zrt_last_error_message();
}

// Whether the calling thread's last error mentions what; a test failure (naming both) when
// it does not.
inline bool mentions(const std::string &what) {
  bool ok = last_error().find(what) != std::string::npos;
  if (!ok) ADD_FAILURE() << "last error '" << last_error() << "' does not mention '" << what << "'";
  return ok;
}

// An engine destroyed when the test leaves, a failed ASSERT included.
struct EngineOwner {
  zrt_engine_h e = nullptr;
  std::vector<zrt_param_h> params;
  EngineOwner() = default;
  EngineOwner(const EngineOwner &) = delete;
  EngineOwner &operator=(const EngineOwner &) = delete;
  ~EngineOwner() {
    if (e) zrt_engine_destroy(e);
  }
};

// A split of MPI_COMM_WORLD (MPI_COMM_NULL for MPI_UNDEFINED), freed when it goes out of
// scope, a failed ASSERT included. The tests link the public library only, so this is
// their twin of zerort's internal zrt::MpiComm. Collective over MPI_COMM_WORLD.
class SplitComm {
 public:
  SplitComm(int color, int key) { MPI_Comm_split(MPI_COMM_WORLD, color, key, &comm_); }
  ~SplitComm() {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  SplitComm(const SplitComm &) = delete;
  SplitComm &operator=(const SplitComm &) = delete;
  operator MPI_Comm() const { return comm_; }  // NOLINT: passed where MPI takes an MPI_Comm

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// True on every rank when the condition holds on every rank.
inline bool all_ranks(bool ok) {
  int v = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return v == 1;
}

// The ranks of this rank's node as the engine's backend sees them: faked nodes
// (ZRT_RANKS_PER_NODE) or the real one.
inline int node_ranks() {
  if (const char *faked = std::getenv("ZRT_RANKS_PER_NODE")) return std::atoi(faked);
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int n = 1;
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  return n;
}

// Why the context has no device memory ("" when it has: a GPU, or the emulated device).
inline std::string device_missing() {
  zrt_pool_h pool = nullptr;
  if (zrt_context_pool(context(), ZRT_MEMORY_DEVICE, &pool) == ZRT_SUCCESS) return "";
  return last_error();
}

}  // namespace test

// Asserts that a zerort call succeeded, printing the call and the last error.
#define CHECK_OK(call) ASSERT_EQ((call), ZRT_SUCCESS) << #call << ": " << test::last_error()

// Skips the test (or fails it, where a device is required) when there is no device memory
// (the library's message already says how to emulate one).
#define ZRT_SKIP_WITHOUT_DEVICE()                        \
  do {                                                   \
    const std::string missing_ = test::device_missing(); \
    if (!missing_.empty()) ZRT_NO_DEVICE(missing_);      \
  } while (0)
