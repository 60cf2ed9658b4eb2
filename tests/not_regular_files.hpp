// Paths that are not regular files, for the tests of every reader: a FIFO (open(2) of one
// for reading waits for ever for a writer), a directory and a character device (/dev/null),
// each with the words a message must name it by; and a deadline for a call handed one.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <vector>

namespace test {

struct NotRegular {
  std::string path;
  std::string kind;  // what the message must say it is
};

// A FIFO and a directory made under the test's temporary folder (the pid in their names),
// removed when it goes, and /dev/null.
class NotRegularFiles {
 public:
  explicit NotRegularFiles(const std::string &tag) {
    const std::string base =
        ::testing::TempDir() + "zrt_" + tag + "_" + std::to_string(::getpid()) + "_";
    fifo_ = base + "fifo";
    dir_ = base + "dir";
    std::filesystem::remove_all(fifo_);
    std::filesystem::remove_all(dir_);
    EXPECT_EQ(::mkfifo(fifo_.c_str(), 0600), 0) << fifo_;
    std::filesystem::create_directory(dir_);
    all_ = {{fifo_, "a FIFO"}, {dir_, "a directory"}, {"/dev/null", "a character device"}};
  }
  ~NotRegularFiles() {
    std::error_code ignored;
    std::filesystem::remove(fifo_, ignored);
    std::filesystem::remove_all(dir_, ignored);
  }
  NotRegularFiles(const NotRegularFiles &) = delete;
  NotRegularFiles &operator=(const NotRegularFiles &) = delete;

  const std::vector<NotRegular> &all() const { return all_; }
  const std::string &fifo() const { return fifo_; }

 private:
  std::string fifo_, dir_;
  std::vector<NotRegular> all_;
};

// Runs call on a thread and returns whether it returned within `seconds`. When it did not
// (blocked on the FIFO), the FIFO is opened for writing and closed, which ends an open(2) or
// read(2) waiting on it, as often as the call opens it again, and the call is waited for
// before returning false.
inline bool returns_within(const std::function<void()> &call, const std::string &fifo,
                           int seconds = 10) {
  std::future<void> done = std::async(std::launch::async, call);
  if (done.wait_for(std::chrono::seconds(seconds)) == std::future_status::ready) {
    done.get();
    return true;
  }
  do {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  } while (done.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready);
  return false;
}

}  // namespace test
