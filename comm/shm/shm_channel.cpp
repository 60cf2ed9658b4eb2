#include "comm/shm/shm_channel.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>

#include "runtime/mpi_error.hpp"

namespace zrt {

ShmChannel::ShmChannel(MPI_Comm comm, size_t slot_bytes, int depth)
    : slot_bytes_((std::max<size_t>(slot_bytes, 64) + 63) / 64 * 64), depth_(std::max(depth, 2)) {
  check_mpi(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
  // Non-contiguous: each rank's part starts on its own pages, which it touches first, so
  // on a NUMA node they sit next to the rank that writes them.
  MPI_Info info = MPI_INFO_NULL;
  check_mpi(MPI_Info_create(&info), "MPI_Info_create");
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  // MPI aligns the parts loosely (Open MPI puts them 8 bytes past a page): each rank's part
  // gets a spare page and every rank rounds every base up to a page, which lands on the
  // same byte of shared memory whatever address each process maps it at.
  const size_t bytes = kControlBytes + static_cast<size_t>(depth_) * slot_bytes_;
  const size_t spare = 4096;
  auto page_align = [](char *p) {
    return reinterpret_cast<char *>((reinterpret_cast<uintptr_t>(p) + 4095) & ~uintptr_t{4095});
  };
  char *mine = nullptr;
  int rc =
      MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes + spare), 1, info, comm, &mine, &win_);
  MPI_Info_free(&info);
  check_mpi(rc, "MPI_Win_allocate_shared");
  control_.resize(static_cast<size_t>(size_));
  slots_.resize(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    MPI_Aint size = 0;
    int disp = 0;
    char *base = nullptr;
    rc = MPI_Win_shared_query(win_, r, &size, &disp, &base);
    if (rc != MPI_SUCCESS) {
      MPI_Win_free(&win_);
      check_mpi(rc, "MPI_Win_shared_query");
    }
    base = page_align(base);
    control_[static_cast<size_t>(r)] = reinterpret_cast<Control *>(base);
    slots_[static_cast<size_t>(r)] = base + kControlBytes;
  }
  mine = page_align(mine);
  Control *own = new (mine) Control;
  own->produced.value.store(0, std::memory_order_relaxed);
  own->consumed.value.store(0, std::memory_order_relaxed);
  std::memset(mine + kControlBytes, 0, bytes - kControlBytes);  // first touch
  // Nobody reads a peer's counters before the peer has initialized them.
  rc = MPI_Barrier(comm);
  if (rc != MPI_SUCCESS) {
    MPI_Win_free(&win_);
    check_mpi(rc, "MPI_Barrier");
  }
}

ShmChannel::~ShmChannel() {
  if (win_ != MPI_WIN_NULL && !abandoned_) MPI_Win_free(&win_);
}

bool ShmChannel::can_produce(uint64_t s) const {
  if (s != next_produce_) return false;
  if (s + 1 <= static_cast<uint64_t>(depth_)) return true;
  const uint64_t need = s + 1 - static_cast<uint64_t>(depth_);
  for (int r = 0; r < size_; ++r)
    if (r != rank_ &&
        control_[static_cast<size_t>(r)]->consumed.value.load(std::memory_order_acquire) < need)
      return false;
  return true;
}

void ShmChannel::produced(uint64_t s) {
  next_produce_ = s + 1;
  control_[static_cast<size_t>(rank_)]->produced.value.store(s + 1, std::memory_order_release);
}

bool ShmChannel::can_consume(uint64_t s) const {
  if (s != next_consume_) return false;
  for (int r = 0; r < size_; ++r)
    if (r != rank_ &&
        control_[static_cast<size_t>(r)]->produced.value.load(std::memory_order_acquire) <= s)
      return false;
  return true;
}

void ShmChannel::consumed(uint64_t s) {
  next_consume_ = s + 1;
  control_[static_cast<size_t>(rank_)]->consumed.value.store(s + 1, std::memory_order_release);
}

}  // namespace zrt
