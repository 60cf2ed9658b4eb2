// runtime/regular_file.hpp: what zerort reads is opened without blocking and refused, named,
// when it is not a regular file (the configuration file's test is in test_config.cpp).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "not_regular_files.hpp"
#include "runtime/error.hpp"
#include "runtime/regular_file.hpp"

using namespace zrt;

namespace {

// The error of call (status and message), or status ZRT_SUCCESS and "".
struct Outcome {
  zrt_status_t status = ZRT_SUCCESS;
  std::string message;
};
Outcome outcome_of(const std::function<void()> &call) {
  Outcome o;
  try {
    call();
  } catch (const Error &e) {
    o = {e.status(), e.what()};
  }
  return o;
}

}  // namespace

TEST(RegularFile, WhatIsNotARegularFileIsRefusedAtOnceNamingWhatItIs) {
  test::NotRegularFiles paths("regular_file");
  for (const test::NotRegular &p : paths.all()) {
    SCOPED_TRACE(p.path);
    Outcome o;
    ASSERT_TRUE(test::returns_within(
        [&] { o = outcome_of([&] { ::close(open_regular_file(p.path, "test file")); }); },
        paths.fifo()))
        << "open_regular_file blocked on " << p.path;
    EXPECT_EQ(o.status, ZRT_ERR_IO);
    EXPECT_EQ(o.message, "cannot open test file " + p.path + ": it is " + p.kind +
                             (p.kind == "a FIFO" ? " (named pipe)" : "") + ", not a regular file");
    Outcome r;
    ASSERT_TRUE(test::returns_within(
        [&] { r = outcome_of([&] { read_regular_file(p.path, "test file", ZRT_ERR_CONFIG); }); },
        paths.fifo()));
    EXPECT_EQ(r.status, ZRT_ERR_CONFIG);
    EXPECT_NE(r.message.find("it is " + p.kind), std::string::npos) << r.message;
  }
}

TEST(RegularFile, ASocketAndAMissingFileAreNamedInTheSystemsWords) {
  const std::string base = ::testing::TempDir() + "zrt_regular_" + std::to_string(::getpid());
  // A socket refuses open(2) itself (ENXIO): the message says what it is all the same.
  const std::string socket_path = base + ".sock";
  ::unlink(socket_path.c_str());
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0) << socket_path;
  EXPECT_EQ(outcome_of([&] { check_regular_file(socket_path, "checkpoint"); }).message,
            "cannot open checkpoint " + socket_path + ": it is a socket, not a regular file");
  ::close(s);
  ::unlink(socket_path.c_str());
  EXPECT_EQ(outcome_of([&] { check_regular_file(base + ".none", "checkpoint"); }).message,
            "cannot open checkpoint " + base + ".none: No such file or directory");
}

TEST(RegularFile, ARegularFileIsReadWholeAndItsDescriptorBlocks) {
  const std::string path = ::testing::TempDir() + "zrt_regular_" + std::to_string(::getpid());
  const std::string text(100000, 'x');
  std::ofstream(path) << text;
  EXPECT_EQ(read_regular_file(path, "test file"), text);
  const int fd = open_regular_file(path, "test file");
  EXPECT_EQ(::fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
  EXPECT_NE(::fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
  ::close(fd);
  ::unlink(path.c_str());
}
