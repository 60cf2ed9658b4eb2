#include "comm/comm_memory.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "runtime/agree.hpp"
#include "runtime/error.hpp"
#include "runtime/mpi_error.hpp"

namespace zrt {

CommMemory::CommMemory(MPI_Comm comm, SharedBuffers *shared, Hooks hooks)
    : comm_(MpiComm::dup(comm)), shared_(shared), hooks_(std::move(hooks)) {}

CommMemory::~CommMemory() {
  if (abandoned_) return;
  for (auto &[p, number] : private_)
    std::free(p);
}

void CommMemory::abandon() noexcept {
  abandoned_ = true;
  comm_.abandon();
}

void CommMemory::gate(const std::function<void()> &checks) {
  run_agreed(
      comm_,
      [&] {
        hooks_.usable();
        checks();
      },
      hooks_.progress);
}

void *CommMemory::allocate(size_t bytes, const std::string &bad_argument) {
  gate([&] {
    if (!bad_argument.empty()) fail(ZRT_ERR_INVALID_ARGUMENT, "{}", bad_argument);
    if (bytes == 0) fail(ZRT_ERR_INVALID_ARGUMENT, "bytes is 0");
    // More than the node has cannot succeed (and only fails later, in the OOM killer, where
    // memory is overcommitted).
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const uint64_t physical = pages > 0 && page > 0
                                  ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                                  : UINT64_MAX / 2;
    if (bytes > physical)
      fail(ZRT_ERR_OUT_OF_MEMORY, "{} bytes asked for; this node has {} bytes", bytes, physical);
  });
  // Numbered per call on every rank, failed or not, so that frees can be compared.
  const uint64_t number = next_++;
  if (shared_ != nullptr) {
    // The backend's group may be this node only (hier): the verdict must reach every rank.
    void *p = nullptr;
    bool mine = false;
    try {
      run_agreed(comm_, [&] {
        p = shared_->allocate(bytes);
        mine = true;
      });
    } catch (...) {
      if (mine) shared_->free(p);  // the whole group has it: another node failed
      throw;
    }
    return p;
  }
  // Private memory needs no peer, but fails on every rank together all the same, as the
  // shared kind does: a program written against one works with the other.
  constexpr size_t kPage = 4096;
  void *p = nullptr;
  try {
    run_agreed(comm_, [&] {
      p = std::aligned_alloc(kPage, (bytes + kPage - 1) / kPage * kPage);
      if (p == nullptr)
        fail(ZRT_ERR_OUT_OF_MEMORY, "out of host memory allocating {} bytes", bytes);
    });
  } catch (...) {
    std::free(p);  // another rank failed
    throw;
  }
  std::memset(p, 0, bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  private_[p] = number;
  return p;
}

void CommMemory::free(void *pointer) {
  uint64_t number = SharedBuffers::kNone;
  gate([&] {
    if (shared_ != nullptr) {
      number = shared_->number_of(pointer);
    } else {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = private_.find(pointer);
      if (it != private_.end()) number = it->second;
    }
    if (number == SharedBuffers::kNone)
      fail(ZRT_ERR_INVALID_ARGUMENT,
           "pointer {} was not returned by zrt_comm_mem_alloc on this communicator (or was "
           "freed already); nothing freed",
           pointer);
  });
  // The same allocation on every rank, or nothing is freed anywhere. Allocations are
  // numbered in the same order on every rank (on every node, for hier).
  uint64_t range[2] = {number, ~number};
  // Under the communicator's watch: a rank that never frees is named, not waited for.
  watched_allreduce(comm_, range, 2, MPI_UINT64_T, MPI_MAX,
                    "all-reduce of the buffer zrt_comm_mem_free frees");
  if (range[0] != ~range[1])
    fail(ZRT_ERR_MISMATCH,
         "the ranks passed different buffers; every rank must free the buffer of the same "
         "zrt_comm_mem_alloc call together; nothing freed");
  if (shared_ != nullptr) return shared_->free(pointer);
  std::lock_guard<std::mutex> lock(mutex_);
  private_.erase(pointer);
  std::free(pointer);
}

}  // namespace zrt
