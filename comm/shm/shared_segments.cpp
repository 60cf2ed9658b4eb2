#include "comm/shm/shared_segments.hpp"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cstring>

#include "runtime/agree.hpp"
#include "runtime/agreement_watch.hpp"
#include "runtime/error.hpp"
#include "runtime/mpi_error.hpp"

namespace zrt {

namespace {

constexpr size_t kPage = 4096;

char *page_align(char *p) {
  return reinterpret_cast<char *>((reinterpret_cast<uintptr_t>(p) + kPage - 1) & ~(kPage - 1));
}

}  // namespace

SharedSegments::SharedSegments(MPI_Comm comm)
    : comm_(MpiComm::dup(comm, "MPI_Comm_dup(shared segments)")) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  // The deadline of the communicator these segments serve.
  const AgreementWatch *parent = AgreementWatch::find(comm);
  watch_ = std::make_unique<AgreementWatch>(comm_, parent != nullptr ? parent->timeout() : 0,
                                            parent != nullptr ? parent->breakage() : nullptr);
}

SharedSegments::~SharedSegments() {
  if (!abandoned_ && watch_->given_up()) abandoned_ = true;
  if (!abandoned_ && !segments_.empty()) {
    // MPI_Win_free waits for every rank of the window and has no deadline: meet first
    // under the watch, so that a rank that never comes is named instead of waited for.
    try {
      watched_barrier(comm_, "barrier before freeing shared-memory windows");
    } catch (const Error &) {
      abandoned_ = true;  // the windows stay mapped until the process ends
    }
  }
  if (abandoned_ || watch_->given_up()) {
    watch_.reset();
    comm_.abandon();
    return;
  }
  watch_.reset();
  // Every rank holds the same segments (allocation and free are collective), so the frees
  // match up.
  for (auto &[number, segment] : segments_)
    release(segment);
}

void SharedSegments::release(Segment &segment) {
  if (segment.win != MPI_WIN_NULL) MPI_Win_free(&segment.win);
}

void *SharedSegments::allocate(size_t bytes) {
  // Numbered per call, failed or not: hier allocates on each node apart, and one node's
  // failure must not shift the numbers the nodes compare when freeing.
  uint64_t number = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    number = next_++;
  }
  // The windows are files in shared memory that every rank then touches in full: what the
  // node's ranks ask for together beyond the node's memory would end in the OOM killer or
  // SIGBUS, not in an error.
  uint64_t total = bytes;
  watched_allreduce(comm_, &total, 1, MPI_UINT64_T, MPI_SUM,
                    "all-reduce of the shared memory asked for");
  run_agreed(comm_, [&] {
    if (bytes == 0) fail(ZRT_ERR_INVALID_ARGUMENT, "bytes is 0");
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const uint64_t physical = pages > 0 && page > 0
                                  ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                                  : UINT64_MAX;
    if (bytes > SIZE_MAX / 2 || total > physical)
      fail(ZRT_ERR_OUT_OF_MEMORY,
           "{} bytes of shared memory asked for on this node ({} by this rank); it has {} bytes",
           total, bytes, physical);
    // Open MPI keeps the windows' backing files in /dev/shm: one fuller than that would
    // raise SIGBUS at the first touch instead of failing here.
    struct statvfs fs {};
    if (statvfs("/dev/shm", &fs) == 0) {
      const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
      if (total > free_bytes)
        fail(ZRT_ERR_OUT_OF_MEMORY,
             "{} bytes of shared memory asked for on this node ({} by this rank); /dev/shm, "
             "where MPI keeps shared windows, has {} bytes free",
             total, bytes, free_bytes);
    }
  });
  Segment segment;
  char *mine = nullptr;
  MPI_Info info = MPI_INFO_NULL;
  MPI_Info_create(&info);
  // Each rank's part on pages of its own, first touched by the rank that owns it.
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  // One spare page per part: MPI places parts loosely (Open MPI 8 bytes past a page), and
  // every rank rounds every base up to a page.
  const int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes + kPage), 1, info, comm_,
                                         &mine, &segment.win);
  MPI_Info_free(&info);
  int created = rc == MPI_SUCCESS ? 1 : 0;
  watched_allreduce(comm_, &created, 1, MPI_INT, MPI_MIN,
                    "agreement on the shared window's creation");
  try {
    run_agreed(comm_, [&] {
      check_mpi(rc, "MPI_Win_allocate_shared");
      if (created == 0) fail(ZRT_ERR_MPI, "MPI_Win_allocate_shared failed on another rank");
      segment.base.resize(static_cast<size_t>(size_));
      segment.bytes.resize(static_cast<size_t>(size_));
      for (int r = 0; r < size_; ++r) {
        MPI_Aint size = 0;
        int disp = 0;
        char *base = nullptr;
        check_mpi(MPI_Win_shared_query(segment.win, r, &size, &disp, &base),
                  "MPI_Win_shared_query");
        segment.base[static_cast<size_t>(r)] = page_align(base);
        segment.bytes[static_cast<size_t>(r)] = static_cast<size_t>(size) - kPage;
      }
      std::memset(segment.base[static_cast<size_t>(rank_)], 0, bytes);
    });
  } catch (...) {
    // Freed together where every rank has the window; where one rank has none, MPI_Win_free
    // would wait for it forever, so the others' windows are left.
    if (created != 0) release(segment);
    throw;
  }
  char *part = segment.base[static_cast<size_t>(rank_)];
  std::lock_guard<std::mutex> lock(mutex_);
  segments_.emplace(number, std::move(segment));
  return part;
}

void SharedSegments::free(void *pointer) {
  const uint64_t number = number_of(pointer);
  // The same segment on every rank, or nobody frees anything.
  uint64_t range[2] = {number, ~number};
  watched_allreduce(comm_, range, 2, MPI_UINT64_T, MPI_MAX, "agreement on zrt_comm_mem_free");
  const uint64_t highest = range[0], lowest = ~range[1];
  if (number == kNone)
    fail(ZRT_ERR_INVALID_ARGUMENT,
         "pointer {} was not returned by zrt_comm_mem_alloc on this communicator (or was freed "
         "already); nothing freed",
         pointer);
  if (highest != lowest)
    fail(ZRT_ERR_MISMATCH,
         "the ranks passed different buffers (or one passed a pointer it does not own); every "
         "rank must free the buffer of the same zrt_comm_mem_alloc call together; nothing freed");
  Segment segment;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = segments_.find(number);
    segment = std::move(it->second);
    segments_.erase(it);
  }
  release(segment);
}

uint64_t SharedSegments::number_of(const void *pointer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto &[n, segment] : segments_)
    if (segment.base[static_cast<size_t>(rank_)] == pointer) return n;
  return kNone;
}

SharedSegments::Location SharedSegments::locate(const void *pointer, size_t bytes) const {
  const char *p = static_cast<const char *>(pointer);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto &[n, segment] : segments_) {
    const char *base = segment.base[static_cast<size_t>(rank_)];
    const size_t size = segment.bytes[static_cast<size_t>(rank_)];
    if (p >= base && p <= base + size && bytes <= size - static_cast<size_t>(p - base))
      return {n, static_cast<uint64_t>(p - base)};
  }
  return {};
}

const char *SharedSegments::peer(Location where, int r, size_t bytes) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = segments_.find(where.segment);
  if (it == segments_.end() || r < 0 || r >= size_) return nullptr;
  const size_t size = it->second.bytes[static_cast<size_t>(r)];
  if (where.offset > size || bytes > size - where.offset) return nullptr;
  return it->second.base[static_cast<size_t>(r)] + where.offset;
}

std::pair<uint64_t, uint64_t> SharedSegments::place_of(const void *mine, size_t bytes) const {
  const Location at = locate(mine, bytes);
  return {at.segment, at.offset};
}

char *SharedSegments::peer_view(const void *mine, size_t bytes, int r) const {
  const Location at = locate(mine, bytes);
  if (at.segment == kNone) return nullptr;
  // The window maps every part read-write (MPI_Win_allocate_shared); peer() hands out the
  // const view the collectives read through.
  return const_cast<char *>(peer(at, r, bytes));
}

size_t SharedSegments::segments() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return segments_.size();
}

}  // namespace zrt
