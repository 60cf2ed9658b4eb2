#include "optim/checkpoint/checkpoint_paths.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "runtime/agree.hpp"
#include "runtime/error.hpp"
#include "runtime/log.hpp"

namespace zrt::checkpoint {

void fsync_path(const std::string &path, bool directory) {
  int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) fail(ZRT_ERR_IO, "cannot open {} to sync it: {}", path, std::strerror(errno));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) fail(ZRT_ERR_IO, "fsync {} failed: {}", path, std::strerror(errno));
}

std::string directory_of(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

std::vector<std::pair<long long, std::string>> files_of(const std::string &pattern) {
  std::vector<std::pair<long long, std::string>> found;
  size_t at = pattern.find("{step}");
  if (at == std::string::npos) {
    struct stat st {};
    if (::stat(pattern.c_str(), &st) == 0) found.emplace_back(0, pattern);
    return found;
  }
  std::string dir = directory_of(pattern);
  std::string base =
      pattern.substr(dir == "." && pattern.find('/') == std::string::npos ? 0 : dir.size() + 1);
  size_t base_at = base.find("{step}");
  std::string prefix = base.substr(0, base_at), suffix = base.substr(base_at + 6);
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() <= prefix.size() + suffix.size() || n.compare(0, prefix.size(), prefix) != 0 ||
          n.compare(n.size() - suffix.size(), suffix.size(), suffix) != 0)
        continue;
      std::string digits = n.substr(prefix.size(), n.size() - prefix.size() - suffix.size());
      if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) continue;
      found.emplace_back(std::stoll(digits), dir + "/" + n);
    }
    closedir(d);
  }
  return found;
}

void same_path_on_every_rank(MPI_Comm comm, const std::string &path, const char *what) {
  uint64_t length = path.size();
  watched_bcast(comm, &length, sizeof length, 0, "broadcast of rank 0's checkpoint path");
  std::string rank0(static_cast<size_t>(length), '\0');
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) rank0 = path;
  watched_bcast(comm, rank0.data(), rank0.size(), 0, "broadcast of rank 0's checkpoint path");
  run_agreed(comm, [&] {
    if (rank0 != path)
      fail(ZRT_ERR_MISMATCH,
           "{} was given {} here but {} on rank 0: every rank must name the same checkpoint", what,
           path, rank0);
  });
}

std::string storage_diagnosis(const std::string &path) {
  std::string out;
  struct statvfs fs {};
  if (::statvfs(directory_of(path).c_str(), &fs) == 0) {
    const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
    if (free_bytes < (64u << 20))
      out += fmt::format("; {} has {} bytes free (No space left on device?)", directory_of(path),
                         free_bytes);
  }
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    out += fmt::format("; the file size limit (ulimit -f) is {} bytes (File too large)",
                       static_cast<uint64_t>(limit.rlim_cur));
  return out;
}

// Checked against the bytes plus a margin for HDF5's metadata and the datasets' alignment,
// so that a write that cannot fit fails at once and whole, rather than half-way through (an
// asynchronous save in the background; HDF5's own writes, whose failure it recovers from
// badly).
std::string room_shortfall(const std::string &path, uint64_t size_now, uint64_t bytes) {
  const uint64_t need = bytes + bytes / 16 + (1u << 20);
  const char *more = size_now > 0 ? " more" : "";
  struct statvfs fs {};
  if (::statvfs(directory_of(path).c_str(), &fs) == 0) {
    const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
    if (free_bytes < need)
      return fmt::format("it needs about {} bytes{} and {} has {} free (No space left on device)",
                         need, more, directory_of(path), free_bytes);
  }
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      limit.rlim_cur < size_now + need)
    return fmt::format(
        "it needs about {} bytes{} but the file size limit (ulimit -f) is {} bytes (File too "
        "large)",
        need, more, static_cast<uint64_t>(limit.rlim_cur));
  return "";
}

void check_room(const std::string &tmp, uint64_t bytes) {
  if (const std::string shortfall = room_shortfall(tmp, 0, bytes); !shortfall.empty())
    fail(ZRT_ERR_IO, "cannot save {}: {}; nothing was written", tmp, shortfall);
}

namespace {

// The PATH.removing names this process's threads are still removing: not a killed job's
// leftovers, and not free for another removal until their thread is done.
std::mutex pending_mutex;
std::set<std::string> &pending() {
  static auto *names = new std::set<std::string>;  // never destroyed: detached threads use it
  return *names;
}
bool is_pending(const std::string &aside) {
  std::lock_guard<std::mutex> lock(pending_mutex);
  return pending().count(aside) > 0;
}

// Removes aside on a detached thread: nothing waits for it, and a process that ends first
// leaves it to the next save's remove_unfinished_saves. It logs nothing: the process may be
// ending. aside is pending until then.
void remove_later(const std::string &aside) {
  {
    std::lock_guard<std::mutex> lock(pending_mutex);
    pending().insert(aside);
  }
  std::thread([aside] {
    std::remove(aside.c_str());
    std::lock_guard<std::mutex> lock(pending_mutex);
    pending().erase(aside);
  }).detach();
}

// Removes path (which has another name, or none, when this returns) as removal says, in the
// caller's call when the background's name is still taken. Returns false, with errno, when
// it could not.
bool remove_file(const std::string &path, Removal removal) {
  if (removal == Removal::InBackground) {
    const std::string aside = path + ".removing";
    if (!is_pending(aside) && std::rename(path.c_str(), aside.c_str()) == 0) {
      remove_later(aside);
      return true;
    }
  }
  return std::remove(path.c_str()) == 0;
}

}  // namespace

void remove_unfinished_saves(const std::string &pattern) {
  for (const char *suffix : {".tmp", ".removing"})
    for (const auto &[step, path] : files_of(pattern + suffix)) {
      if (is_pending(path)) continue;  // this process's own removal, under way
      if (std::remove(path.c_str()) != 0)
        log::warn("cannot remove {}, left by a save that did not finish: {}", path,
                  std::strerror(errno));
      else
        log::info("removed {}, left by a save that did not finish", path);
    }
}

void prune(const std::string &pattern, int keep, Removal removal) {
  if (pattern.find("{step}") == std::string::npos || keep <= 0) return;
  std::vector<std::pair<long long, std::string>> found = files_of(pattern);
  std::sort(found.begin(), found.end());
  for (size_t i = 0; i + static_cast<size_t>(keep) < found.size(); ++i) {
    if (!remove_file(found[i].second, removal))
      log::warn("keep_last: cannot remove {}: {}", found[i].second, std::strerror(errno));
    else
      log::info("keep_last: removed {}", found[i].second);
  }
}

void replace_file(const std::string &tmp, const std::string &path, Removal removal) {
  // The previous file keeps a second name across the rename, so the rename frees nothing;
  // that name goes afterwards. Without hard links, the rename frees it in place.
  const std::string aside = path + ".removing";
  const bool linked = removal == Removal::InBackground && !is_pending(aside) &&
                      ::link(path.c_str(), aside.c_str()) == 0;
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    if (linked) std::remove(aside.c_str());
    fail(ZRT_ERR_IO, "cannot rename {} to {}: {}", tmp, path, std::strerror(err));
  }
  if (linked) remove_later(aside);
}

}  // namespace zrt::checkpoint
