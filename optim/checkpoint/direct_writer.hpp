// The writes of one rank's part of a checkpoint: large writes at given file offsets, the
// aligned middle of each through O_DIRECT where the file system takes it, the rest through
// the page cache.
//
// Why direct: measured on the development VM (ext4 on virtio, 746 MB in 4 MiB pwrites and
// one fsync), the page cache path ran at 0.36-0.90 GB/s and cost 0.66-1.9 s of CPU, almost
// all of it in the kernel (page allocation, the copy, write-back); O_DIRECT ran at
// 2.0-2.7 GB/s for 0.07-0.09 s of CPU. That CPU is what a background save takes from the
// training steps it overlaps. DeepSpeed's FastPersist makes the same choice.
//
// O_DIRECT needs the file offset, the length and the memory address aligned (kAlignment
// covers every logical block size in use). A write's unaligned head and tail (less than
// kAlignment each) go through the page cache. Only whole pages of the write's own range go
// direct, so the bytes of a neighbouring dataset or of HDF5's metadata that share a page
// with it are never written here, and pages two ranks share are written through the page
// cache by both: on one node the kernel keeps them coherent, across nodes the file
// system's own locking must (as for any two writers of one page). A source that is not
// aligned is copied through an aligned bounce buffer, a piece at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace zrt::checkpoint {

class DirectWriter {
 public:
  static constexpr size_t kAlignment = 4096;

  // Opens path (which exists) for writing. direct: try O_DIRECT as well; a file system that
  // refuses it at open (tmpfs before Linux 6.6, some FUSE and network mounts) is written
  // through the page cache. Throws errno when the file cannot be opened.
  DirectWriter(const std::string &path, bool direct);
  ~DirectWriter();
  DirectWriter(const DirectWriter &) = delete;
  DirectWriter &operator=(const DirectWriter &) = delete;

  // Writes bytes at offset, all of them. Throws errno (EFBIG, ENOSPC, EIO, ...) on failure.
  // A direct write the file system refuses with EINVAL is written again through the page
  // cache, and the rest of the file goes that way too.
  void write(const void *data, size_t bytes, uint64_t offset);
  // fsync, then closes. Throws errno.
  void finish();
  // Closes without syncing (after a failure).
  void close() noexcept;

  // Bytes written so far through O_DIRECT and through the page cache.
  uint64_t direct_bytes() const { return direct_bytes_; }
  uint64_t buffered_bytes() const { return buffered_bytes_; }

 private:
  void write_buffered(const char *data, size_t bytes, uint64_t offset);
  void write_direct(const char *data, size_t bytes, uint64_t offset);  // all aligned

  int fd_ = -1;         // through the page cache
  int direct_fd_ = -1;  // O_DIRECT, or -1
  struct FreeAligned {
    void operator()(char *p) const;
  };
  std::unique_ptr<char, FreeAligned> bounce_;  // for sources that are not aligned
  uint64_t direct_bytes_ = 0, buffered_bytes_ = 0;
};

}  // namespace zrt::checkpoint
