#include "optim/checkpoint/block_reader.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "runtime/error.hpp"
#include "runtime/regular_file.hpp"

namespace zrt::checkpoint {

namespace {

constexpr size_t kAlign = 4096;                  // every logical block size in use
constexpr size_t kMaxStaged = size_t{64} << 20;  // larger blocks (format 1) are mapped
constexpr size_t kPage = 4096;  // mincore's unit, and where a populated mapping starts

struct FreeDeleter {
  void operator()(void *p) const { std::free(p); }
};

// The file, open twice: mapped (blocks in the page cache are hashed in place) and, where
// the file system takes it, with O_DIRECT.
class File {
 public:
  File(const std::string &path, bool direct) : path_(path) {
    fd_ = open_regular_file(path, "checkpoint");
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || st.st_size <= 0) {
      ::close(fd_);
      fail(ZRT_ERR_IO, "cannot read the size of {}", path);
    }
    size_ = static_cast<size_t>(st.st_size);
    void *p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) {
      ::close(fd_);
      fail(ZRT_ERR_IO, "cannot map {}: {}", path, std::strerror(errno));
    }
    data_ = static_cast<const char *>(p);
    if (direct) direct_fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  }
  ~File() {
    ::munmap(const_cast<char *>(data_), size_);
    ::close(fd_);
    if (direct_fd_ >= 0) ::close(direct_fd_);
  }
  File(const File &) = delete;
  File &operator=(const File &) = delete;

  const char *data() const { return data_; }
  size_t size() const { return size_; }
  bool direct() const { return direct_fd_ >= 0 && direct_ok_.load(std::memory_order_relaxed); }

  // True when every page of [offset, offset + bytes) is in the page cache (mincore). Asked
  // of the mapping rather than tried with preadv2(RWF_NOWAIT), whose misses start
  // readahead into the page cache, which the O_DIRECT read that follows then duplicates.
  bool resident(uint64_t offset, size_t bytes, std::vector<unsigned char> &vec) const {
    const uint64_t start = offset / kPage * kPage;
    const size_t len = offset + bytes - start;
    vec.resize((len + kPage - 1) / kPage);
    if (::mincore(const_cast<char *>(data_) + start, len, vec.data()) != 0) return false;
    return std::all_of(vec.begin(), vec.end(), [](unsigned char c) { return (c & 1) != 0; });
  }

  // Maps [offset, offset + bytes) in with one call rather than a fault per page.
  void populate(uint64_t offset, size_t bytes) const {
    const uint64_t start = offset / kPage * kPage;
    char *at = const_cast<char *>(data_) + start;
#ifdef MADV_POPULATE_READ
    if (::madvise(at, offset + bytes - start, MADV_POPULATE_READ) == 0) return;
#endif
    ::madvise(at, offset + bytes - start, MADV_WILLNEED);
  }

  // Reads [offset, offset + bytes) into buf, which holds bytes + 2 * kAlign and is aligned
  // to kAlign; returns where the bytes start in it. O_DIRECT where it works; a file system
  // that refuses it on a read (EINVAL) is read through the page cache from then on.
  const char *read(uint64_t offset, size_t bytes, char *buf, bool *direct_used) {
    if (direct()) {
      const uint64_t start = offset / kAlign * kAlign;
      const uint64_t end = std::min<uint64_t>((offset + bytes + kAlign - 1) / kAlign * kAlign,
                                              (size_ + kAlign - 1) / kAlign * kAlign);
      size_t done = 0;
      const size_t want = end - start, need = offset + bytes - start;
      while (done < need) {
        ssize_t r = ::pread(direct_fd_, buf + done, want - done, static_cast<off_t>(start + done));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == EINVAL && done == 0) {
          direct_ok_.store(false, std::memory_order_relaxed);
          break;
        }
        if (r < 0) fail(ZRT_ERR_IO, "cannot read {}: {}", path_, std::strerror(errno));
        if (r == 0) fail(ZRT_ERR_IO, "{} ends at byte {} (a truncated file?)", path_, start + done);
        done += static_cast<size_t>(r);
        if (done % kAlign != 0 && done < need) break;  // a short read mid-file: finish buffered
      }
      if (done >= need) {
        *direct_used = true;
        return buf + (offset - start);
      }
      if (done > 0) {  // the rest through the page cache
        read_buffered(start + done, need - done, buf + done);
        *direct_used = true;
        return buf + (offset - start);
      }
    }
    read_buffered(offset, bytes, buf);
    *direct_used = false;
    return buf;
  }

  // Copies [offset, offset + bytes) into buf through the page cache.
  void read_buffered(uint64_t offset, size_t bytes, char *buf) const {
    for (size_t done = 0; done < bytes;) {
      ssize_t r = ::pread(fd_, buf + done, bytes - done, static_cast<off_t>(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) fail(ZRT_ERR_IO, "cannot read {}: {}", path_, std::strerror(errno));
      if (r == 0) fail(ZRT_ERR_IO, "{} ends at byte {} (a truncated file?)", path_, offset + done);
      done += static_cast<size_t>(r);
    }
  }

 private:
  std::string path_;
  const char *data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1, direct_fd_ = -1;
  std::atomic<bool> direct_ok_{true};
};

int worker_count(size_t jobs) {
  cpu_set_t set;
  CPU_ZERO(&set);
  int cpus = ::sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  // At least two, so that one reads while the other hashes, even on a rank bound to one
  // core; a handful of requests keeps a local NVMe or a parallel file system busy.
  return static_cast<int>(std::min<size_t>(jobs, static_cast<size_t>(std::clamp(cpus, 2, 8))));
}

}  // namespace

BlockReadStats read_blocks(const std::string &path, std::vector<BlockJob> &jobs, bool direct,
                           const std::function<void(void *, const void *, size_t)> &device_copy,
                           bool *wrote) {
  BlockReadStats stats;
  stats.blocks = jobs.size();
  if (jobs.empty()) return stats;
  // In file order, so the workers' requests move through the file together.
  std::sort(jobs.begin(), jobs.end(), [](const BlockJob &a, const BlockJob &b) {
    const uint64_t oa = a.src->offset + a.block * a.src->block * sizeof(float),
                   ob = b.src->offset + b.block * b.src->block * sizeof(float);
    return a.src->contiguous != b.src->contiguous ? a.src->contiguous < b.src->contiguous : oa < ob;
  });
  File file(path, direct);

  const int threads = worker_count(jobs.size());
  stats.threads = threads;
  std::atomic<size_t> next{0}, cached{0}, mapped{0}, direct_blocks{0}, buffered{0}, bytes{0};
  std::atomic<bool> stop{false}, any_written{false};
  std::mutex mutex;
  std::condition_variable cv;
  // The first failure by job index (the same block names itself whichever worker finds it).
  size_t failed_job = jobs.size();
  zrt_status_t failed_status = ZRT_SUCCESS;
  std::string failed_message;
  auto record = [&](size_t j, zrt_status_t status, std::string message) {
    std::lock_guard lock(mutex);
    if (j < failed_job) failed_job = j, failed_status = status, failed_message = std::move(message);
    stop.store(true);
    cv.notify_all();
  };
  // Device copies wait here for the calling thread.
  struct DeviceCopy {
    const float *values;
    const BlockJob *job;
    size_t at;
    bool done = false;
  };
  std::deque<DeviceCopy *> device_queue;
  int running = threads;

  auto work = [&] {
    std::unique_ptr<char, FreeDeleter> staging;
    size_t staging_bytes = 0;
    std::vector<unsigned char> residency;
    for (;;) {
      if (stop.load()) break;
      const size_t j = next.fetch_add(1);
      if (j >= jobs.size()) break;
      const BlockJob &job = jobs[j];
      const Source &s = *job.src;
      const size_t at = job.block * s.block, n = std::min(s.block, s.numel - at),
                   nbytes = n * sizeof(float);
      try {
        // The bytes are hashed where they are copied from, so that what was checked is
        // what lands: a page of a mapping could be evicted between the hash and the copy,
        // and read again from storage. Only a block too large to stage (format 1) is
        // hashed in the mapping.
        const float *values = nullptr;
        if (!s.contiguous) {
          values = s.values.data() + at;
        } else {
          const uint64_t offset = s.offset + at * sizeof(float);
          if (nbytes > kMaxStaged) {
            file.populate(offset, nbytes);
            values = reinterpret_cast<const float *>(file.data() + offset);
            mapped.fetch_add(1);
          } else {
            const size_t need = (nbytes + 3 * kAlign - 1) / kAlign * kAlign;
            if (staging_bytes < need) {
              staging.reset();
              staging.reset(static_cast<char *>(std::aligned_alloc(kAlign, need)));
              if (!staging) throw std::bad_alloc();
              staging_bytes = need;
            }
            if (file.resident(offset, nbytes, residency)) {
              // A copy, not the mapping: evicted pages are read again, and then hashed.
              file.read_buffered(offset, nbytes, staging.get());
              values = reinterpret_cast<const float *>(staging.get());
              cached.fetch_add(1);
            } else {
              bool used_direct = false;
              values = reinterpret_cast<const float *>(
                  file.read(offset, nbytes, staging.get(), &used_direct));
              (used_direct ? direct_blocks : buffered).fetch_add(1);
            }
          }
        }
        const uint64_t computed = XXH3_64bits(values, nbytes);
        if (computed != s.hashes[job.block]) {
          record(j, ZRT_ERR_IO,
                 fmt::format("dataset /{} does not match its checksum (block {} of {}: elements "
                             "{}..{}, stored {:016x}, computed {:016x}): {} is corrupted",
                             s.name, job.block, s.hashes.size(), at, at + n - 1,
                             s.hashes[job.block], computed, path));
          break;
        }
        bool on_device = false;
        for (const BlockTarget &t : job.targets) {
          if (t.on_device) {
            on_device = true;
            continue;
          }
          any_written.store(true);
          std::memcpy(t.dst, values + (t.from - at), t.count * sizeof(float));
        }
        if (on_device) {
          DeviceCopy copy{values, &job, at};
          std::unique_lock lock(mutex);
          device_queue.push_back(&copy);
          cv.notify_all();
          cv.wait(lock, [&] { return copy.done; });
        }
        bytes.fetch_add(nbytes);
      } catch (const Error &e) {
        record(j, e.status(), e.what());
        break;
      } catch (const std::bad_alloc &) {
        record(j, ZRT_ERR_OUT_OF_MEMORY, "out of host memory for a checkpoint block's buffer");
        break;
      } catch (const std::exception &e) {
        record(j, ZRT_ERR_INTERNAL, e.what());
        break;
      }
    }
    std::lock_guard lock(mutex);
    --running;
    cv.notify_all();
  };

  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error &) {
      std::lock_guard lock(mutex);
      running -= threads - t;  // the workers that did start do all the blocks
      break;
    }
  }
  if (pool.empty()) fail(ZRT_ERR_INTERNAL, "cannot start a thread to read {}", path);
  // The calling thread copies device state as the workers hand it over.
  {
    std::unique_lock lock(mutex);
    for (;;) {
      cv.wait(lock, [&] { return !device_queue.empty() || running == 0; });
      if (device_queue.empty()) break;
      DeviceCopy *c = device_queue.front();
      device_queue.pop_front();
      lock.unlock();
      const size_t j = static_cast<size_t>(c->job - jobs.data());
      try {
        if (!stop.load())
          for (const BlockTarget &t : c->job->targets)
            if (t.on_device) {
              any_written.store(true);  // before: a copy that fails may have landed in part
              device_copy(t.dst, c->values + (t.from - c->at), t.count * sizeof(float));
            }
      } catch (const Error &e) {
        record(j, e.status(), e.what());
      } catch (const std::bad_alloc &) {
        record(j, ZRT_ERR_OUT_OF_MEMORY, "out of host memory copying checkpoint state");
      } catch (const std::exception &e) {
        record(j, ZRT_ERR_INTERNAL, e.what());
      }
      lock.lock();
      c->done = true;
      cv.notify_all();
    }
  }
  for (std::thread &t : pool)
    t.join();
  *wrote = any_written.load();
  stats.cached_blocks = cached.load();
  stats.mapped_blocks = mapped.load();
  stats.direct_blocks = direct_blocks.load();
  stats.buffered_blocks = buffered.load();
  stats.bytes = bytes.load();
  if (failed_status != ZRT_SUCCESS) throw Error(failed_status, failed_message);
  return stats;
}

}  // namespace zrt::checkpoint
