#include "runtime/mpi_lifetime.hpp"

#include <mpi.h>

#include <mutex>

#include "runtime/mpi_error.hpp"

namespace zrt {

namespace {
std::mutex g_mutex;
bool g_zerort_initialized = false;  // MPI_Init_thread was called by zerort
int g_owned_contexts = 0;           // contexts alive that hold MPI initialized by zerort
bool g_abandoned = false;           // some context's ranks went out of step: never finalize
}  // namespace

bool mpi_acquire(int *thread_level) {
  std::lock_guard lock(g_mutex);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    fail(ZRT_ERR_INVALID_STATE,
         "MPI has already been finalized; zerort cannot run after MPI_Finalize");
  if (initialized) {
    MPI_Query_thread(thread_level);
    if (!g_zerort_initialized) return false;
    ++g_owned_contexts;  // zerort's MPI: every context keeps it alive
    return true;
  }
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, thread_level),
            "MPI_Init_thread");
  g_zerort_initialized = true;
  ++g_owned_contexts;
  return true;
}

void mpi_release(bool owned) noexcept {
  if (!owned) return;
  std::lock_guard lock(g_mutex);
  if (--g_owned_contexts == 0 && !g_abandoned) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
}

void mpi_abandon() noexcept {
  std::lock_guard lock(g_mutex);
  g_abandoned = true;
  --g_owned_contexts;
}

}  // namespace zrt
